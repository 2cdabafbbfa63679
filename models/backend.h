// The kernel boundary of the model layer: layers describe what to compute, a Backend
// computes it. The CPU backend (models/cpu/, on Eigen) is the only one today; a CUDA one
// implements the same interface. All pointers are to contiguous NCHW float32 memory the
// backend can address; "accumulate" outputs are added to, the others overwritten.
#pragma once

#include <cstdint>

namespace kolo::models {

struct ConvShape {
  int64_t batch, in_channels, height, width;  // input  N, C, H, W
  int64_t out_channels, kernel, stride, padding;
  int64_t out_height() const { return (height + 2 * padding - kernel) / stride + 1; }
  int64_t out_width() const { return (width + 2 * padding - kernel) / stride + 1; }
};

struct PoolShape {
  int64_t batch, channels, height, width;
  int64_t kernel, stride, padding;
  int64_t out_height() const { return (height + 2 * padding - kernel) / stride + 1; }
  int64_t out_width() const { return (width + 2 * padding - kernel) / stride + 1; }
};

class Backend {
 public:
  virtual ~Backend() = default;

  // y = conv(x, w) + b (b may be null).
  virtual void conv2d_forward(const ConvShape& s, const float* x, const float* w, const float* b,
                              float* y) = 0;
  // dw += dL/dw, db += dL/db (db may be null), dx = dL/dx (dx may be null: first layer).
  virtual void conv2d_backward(const ConvShape& s, const float* x, const float* w, const float* dy,
                               float* dx, float* dw, float* db) = 0;

  // Per-channel sums over N, H, W, in double: sum[c] = Σ x. Then, given each channel's
  // mean, squares[c] = Σ (x - mean[c])² (two passes: E[x²] - E[x]² in float loses
  // everything when |mean| >> std, as it often is before a ResNet's batch norms).
  virtual void channel_sums(int64_t n, int64_t c, int64_t hw, const float* x, double* sum) = 0;
  virtual void channel_centered_squares(int64_t n, int64_t c, int64_t hw, const float* x,
                                        const double* mean, double* squares) = 0;
  // y = (x - mean[c]) * inv_std[c] * gamma[c] + beta[c].
  virtual void batchnorm_apply(int64_t n, int64_t c, int64_t hw, const float* x, const float* mean,
                               const float* inv_std, const float* gamma, const float* beta,
                               float* y) = 0;
  // Per-channel Σ dy and Σ dy·(x - mean)·inv_std, as doubles.
  virtual void batchnorm_grad_sums(int64_t n, int64_t c, int64_t hw, const float* x, const float* dy,
                                   const float* mean, const float* inv_std, double* sum_dy,
                                   double* sum_dy_xhat) = 0;
  // Training-mode dx = gamma·inv_std·(dy - sum_dy/M - xhat·sum_dy_xhat/M), M = count.
  virtual void batchnorm_backward_input(int64_t n, int64_t c, int64_t hw, const float* x,
                                        const float* dy, const float* mean, const float* inv_std,
                                        const float* gamma, const double* sum_dy,
                                        const double* sum_dy_xhat, double count, float* dx) = 0;

  virtual void relu_forward(int64_t count, float* x) = 0;  // in place
  // dx = dy where y > 0 (may be in place: dx == dy).
  virtual void relu_backward(int64_t count, const float* y, const float* dy, float* dx) = 0;

  // Max pooling; argmax[i] is the input-plane index of output i's maximum (first wins).
  virtual void maxpool_forward(const PoolShape& s, const float* x, float* y, int32_t* argmax) = 0;
  virtual void maxpool_backward(const PoolShape& s, const float* dy, const int32_t* argmax,
                                float* dx) = 0;

  // y (rows×out) = x (rows×in) · wᵀ (w is out×in, PyTorch's Linear layout) + b.
  virtual void linear_forward(int64_t rows, int64_t in, int64_t out, const float* x, const float* w,
                              const float* b, float* y) = 0;
  // dw += dyᵀ·x, db += Σ dy, dx = dy·w (dx may be null).
  virtual void linear_backward(int64_t rows, int64_t in, int64_t out, const float* x,
                               const float* w, const float* dy, float* dx, float* dw, float* db) = 0;

  // a[i] += b[i].
  virtual void add_into(int64_t count, float* a, const float* b) = 0;
};

// The backend layers use.
Backend& compute();

}  // namespace kolo::models
