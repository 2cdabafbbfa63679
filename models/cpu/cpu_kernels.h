// The CPU's Kernels: Eigen GEMMs and oneDNN for convolutions and linear layers, plain loops
// (left to the compiler's vectoriser) for the rest, spread over the pool of kolo::models
// threads where the work is large enough. One file per kind of op:
//   conv_dispatch.cc   which convolution path runs (conv_im2col.cc, conv_onednn.cc)
//   linear.cc          linear layers
//   batchnorm.cc       batch norm's per-channel passes
//   batchnorm_steps.cc batch norm's whole training/eval steps, from those passes
//   pooling.cc         max and global average pooling
//   zero_pad.cc        zero padding
//   elementwise.cc     ReLU, residual adds, scaling, products
//   loss.cc            softmax cross-entropy and accuracy
//   optimizer_steps.cc SGD, Adam and Adadelta updates
//   unscale.cc         the loss scaler's unscale-and-check
#pragma once

#include "models/kernels.h"

namespace kolo::models::cpu {

class CpuKernels final : public Kernels {
 public:
  void conv2d_forward(const ConvShape& s, const float* x, const float* w, const float* b, float* y) override;
  void conv2d_backward(const ConvShape& s, const float* x, const float* w, const float* dy, float* dx, float* dw,
                       float* db) override;
  void linear_forward(int64_t rows, int64_t in, int64_t out, const float* x, const float* w, const float* b,
                      float* y) override;
  void linear_backward(int64_t rows, int64_t in, int64_t out, const float* x, const float* w, const float* dy,
                       float* dx, float* dw, float* db) override;

  void channel_sums(int64_t n, int64_t c, int64_t hw, const float* x, double* sum) override;
  void channel_centered_squares(int64_t n, int64_t c, int64_t hw, const float* x, const double* mean,
                                double* squares) override;
  void batchnorm_apply(int64_t n, int64_t c, int64_t hw, const float* x, const float* mean, const float* inv_std,
                       const float* gamma, const float* beta, float* y) override;
  void batchnorm_grad_sums(int64_t n, int64_t c, int64_t hw, const float* x, const float* dy, const float* mean,
                           const float* inv_std, double* sum_dy, double* sum_dy_xhat) override;
  void batchnorm_backward_input(int64_t n, int64_t c, int64_t hw, const float* x, const float* dy, const float* mean,
                                const float* inv_std, const float* gamma, const double* sum_dy,
                                const double* sum_dy_xhat, double count, float* dx) override;

  void batchnorm_forward_training(int64_t n, int64_t c, int64_t hw, const float* x, const float* gamma,
                                  const float* beta, double eps, double momentum, float* running_mean,
                                  float* running_var, float* num_batches_tracked, float* save_mean,
                                  float* save_inv_std, float* y) override;
  void batchnorm_finish_statistics(int64_t c, const double* mean, const double* squares, double count, double eps,
                                   double momentum, float* running_mean, float* running_var,
                                   float* num_batches_tracked, float* save_mean, float* save_inv_std) override;
  void batchnorm_inference_stats(int64_t c, const float* running_mean, const float* running_var, double eps,
                                 float* mean, float* inv_std) override;
  void batchnorm_backward_training(int64_t n, int64_t c, int64_t hw, const float* x, const float* dy,
                                   const float* mean, const float* inv_std, const float* gamma, float* dgamma,
                                   float* dbeta, float* dx) override;

  void relu_forward(int64_t count, float* x) override;
  void relu_backward(int64_t count, const float* y, const float* dy, float* dx) override;
  void maxpool_forward(const PoolShape& s, const float* x, float* y, int32_t* argmax) override;
  void maxpool_backward(const PoolShape& s, const float* dy, const int32_t* argmax, float* dx) override;
  void global_avg_pool_forward(int64_t planes, int64_t hw, const float* x, float* y) override;
  void global_avg_pool_backward(int64_t planes, int64_t hw, const float* dy, float* dx) override;
  void zero_pad_forward(int64_t planes, int64_t h, int64_t w, int64_t pad, const float* x, float* y) override;
  void zero_pad_backward(int64_t planes, int64_t h, int64_t w, int64_t pad, const float* dy, float* dx) override;

  void add_into(int64_t count, float* a, const float* b) override;
  void scale(int64_t count, float* x, float factor) override;
  void multiply(int64_t count, const float* a, const float* b, float* out) override;

  double softmax_cross_entropy(int64_t rows, int64_t classes, const float* logits, const int32_t* labels,
                               float* grad) override;
  int64_t count_correct(int64_t rows, int64_t classes, const float* logits, const int32_t* labels) override;

  void sgd_step(std::span<const UpdateTensors> tensors, const SgdStep& step) override;
  void adam_step(std::span<const UpdateTensors> tensors, const AdamStep& step) override;
  void adadelta_step(std::span<const UpdateTensors> tensors, const AdadeltaStep& step) override;
  bool unscale_and_check(std::span<float* const> tensors, std::span<const int64_t> counts, float inv_scale) override;
};

}  // namespace kolo::models::cpu
