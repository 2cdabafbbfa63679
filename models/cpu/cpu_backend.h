// The CPU backend: Eigen GEMMs for convolutions and linear layers, plain loops (left to
// the compiler's vectoriser) for the rest, spread over the pool of kolo::models threads.
#pragma once

#include "models/backend.h"

namespace kolo::models::cpu {

class CpuBackend final : public Backend {
 public:
  void conv2d_forward(const ConvShape& s, const float* x, const float* w, const float* b,
                      float* y) override;
  void conv2d_backward(const ConvShape& s, const float* x, const float* w, const float* dy,
                       float* dx, float* dw, float* db) override;

  void channel_sums(int64_t n, int64_t c, int64_t hw, const float* x, double* sum) override;
  void channel_centered_squares(int64_t n, int64_t c, int64_t hw, const float* x, const double* mean,
                                double* squares) override;
  void batchnorm_apply(int64_t n, int64_t c, int64_t hw, const float* x, const float* mean,
                       const float* inv_std, const float* gamma, const float* beta,
                       float* y) override;
  void batchnorm_grad_sums(int64_t n, int64_t c, int64_t hw, const float* x, const float* dy,
                           const float* mean, const float* inv_std, double* sum_dy,
                           double* sum_dy_xhat) override;
  void batchnorm_backward_input(int64_t n, int64_t c, int64_t hw, const float* x, const float* dy,
                                const float* mean, const float* inv_std, const float* gamma,
                                const double* sum_dy, const double* sum_dy_xhat, double count,
                                float* dx) override;

  void relu_forward(int64_t count, float* x) override;
  void relu_backward(int64_t count, const float* y, const float* dy, float* dx) override;
  void maxpool_forward(const PoolShape& s, const float* x, float* y, int32_t* argmax) override;
  void maxpool_backward(const PoolShape& s, const float* dy, const int32_t* argmax,
                        float* dx) override;

  void linear_forward(int64_t rows, int64_t in, int64_t out, const float* x, const float* w,
                      const float* b, float* y) override;
  void linear_backward(int64_t rows, int64_t in, int64_t out, const float* x, const float* w,
                       const float* dy, float* dx, float* dw, float* db) override;

  void add_into(int64_t count, float* a, const float* b) override;

  void global_avg_pool_forward(int64_t planes, int64_t hw, const float* x, float* y) override;
  void global_avg_pool_backward(int64_t planes, int64_t hw, const float* dy, float* dx) override;
  void zero_pad_forward(int64_t planes, int64_t h, int64_t w, int64_t pad, const float* x, float* y) override;
  void zero_pad_backward(int64_t planes, int64_t h, int64_t w, int64_t pad, const float* dy, float* dx) override;
};

}  // namespace kolo::models::cpu
