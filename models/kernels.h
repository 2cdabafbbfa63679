// The kernel boundary of the model layer: layers, losses, optimizers and loss scaling say
// what to compute, a Kernels implementation computes it. Each op has one call here and one
// implementation per device: models/cpu/ (Eigen, oneDNN and plain loops on kolo's thread
// pool) and models/cuda/ (cuDNN, cuBLAS and kolo's own CUDA kernels). Callers never branch
// on the device: kernels(device) picks the implementation.
//
// All pointers are to contiguous NCHW float32 memory the implementation can address (host
// memory for the CPU, the GPU's for CUDA) unless said otherwise; "accumulate" outputs are
// added to, the others overwritten. The exceptions are host memory on every device: the
// double arrays of the per-channel batch-norm passes (SyncBatchNorm's reducer sums them
// across ranks on the host) and the labels of the loss (they come from the data loader).
#pragma once

#include <cstdint>
#include <span>

#include "kolo/kolo.h"

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

class Kernels {
 public:
  virtual ~Kernels() = default;

  // ---- Convolution and linear layers ---------------------------------------------------
  // y = conv(x, w) + b (b may be null).
  virtual void conv2d_forward(const ConvShape& s, const float* x, const float* w, const float* b, float* y) = 0;
  // dw += dL/dw, db += dL/db (db may be null), dx = dL/dx (dx may be null: first layer).
  virtual void conv2d_backward(const ConvShape& s, const float* x, const float* w, const float* dy, float* dx,
                               float* dw, float* db) = 0;
  // y (rows×out) = x (rows×in) · wᵀ (w is out×in, PyTorch's Linear layout) + b.
  virtual void linear_forward(int64_t rows, int64_t in, int64_t out, const float* x, const float* w, const float* b,
                              float* y) = 0;
  // dw += dyᵀ·x, db += Σ dy, dx = dy·w (dx may be null).
  virtual void linear_backward(int64_t rows, int64_t in, int64_t out, const float* x, const float* w,
                               const float* dy, float* dx, float* dw, float* db) = 0;

  // ---- Batch norm, pass by pass (host doubles) -----------------------------------------
  // Per-channel sums over N, H, W, in double: sum[c] = Σ x. Then, given each channel's
  // mean, squares[c] = Σ (x - mean[c])² (two passes: E[x²] - E[x]² in float loses
  // everything when |mean| >> std, as it often is before a ResNet's batch norms).
  // `sum`, `mean` and `squares` are host arrays of c doubles.
  virtual void channel_sums(int64_t n, int64_t c, int64_t hw, const float* x, double* sum) = 0;
  virtual void channel_centered_squares(int64_t n, int64_t c, int64_t hw, const float* x, const double* mean,
                                        double* squares) = 0;
  // y = (x - mean[c]) * inv_std[c] * gamma[c] + beta[c].
  virtual void batchnorm_apply(int64_t n, int64_t c, int64_t hw, const float* x, const float* mean,
                               const float* inv_std, const float* gamma, const float* beta, float* y) = 0;
  // Per-channel Σ dy and Σ dy·(x - mean)·inv_std, as doubles (host arrays of c).
  virtual void batchnorm_grad_sums(int64_t n, int64_t c, int64_t hw, const float* x, const float* dy,
                                   const float* mean, const float* inv_std, double* sum_dy,
                                   double* sum_dy_xhat) = 0;
  // Training-mode dx = gamma·inv_std·(dy - sum_dy/M - xhat·sum_dy_xhat/M), M = count
  // (sum_dy and sum_dy_xhat are host arrays of c doubles).
  virtual void batchnorm_backward_input(int64_t n, int64_t c, int64_t hw, const float* x, const float* dy,
                                        const float* mean, const float* inv_std, const float* gamma,
                                        const double* sum_dy, const double* sum_dy_xhat, double count,
                                        float* dx) = 0;

  // ---- Batch norm, whole steps (statistics stay in the implementation's memory) ---------
  // Training-mode batch norm in one call: per-channel mean and biased variance in double
  // (two passes, as channel_sums and channel_centered_squares), save_mean and save_inv_std
  // (float, C values), the running statistics updated as PyTorch does (unbiased variance,
  // running = (1 - momentum)·running + momentum·batch, momentum rounded to float),
  // num_batches_tracked incremented, and y = batchnorm_apply(...). Requires n·hw > 1.
  virtual void batchnorm_forward_training(int64_t n, int64_t c, int64_t hw, const float* x, const float* gamma,
                                          const float* beta, double eps, double momentum, float* running_mean,
                                          float* running_var, float* num_batches_tracked, float* save_mean,
                                          float* save_inv_std, float* y) = 0;
  // SyncBatchNorm's end of the same step, after the caller has summed the statistics across
  // ranks on the host: from `mean` and `squares` (Σ(x - mean)², host arrays of c doubles)
  // over `count` values per channel, as batchnorm_forward_training does after its two passes
  // (save_mean, save_inv_std, running statistics, num_batches_tracked); no normalisation.
  virtual void batchnorm_finish_statistics(int64_t c, const double* mean, const double* squares, double count,
                                           double eps, double momentum, float* running_mean, float* running_var,
                                           float* num_batches_tracked, float* save_mean, float* save_inv_std) = 0;
  // Eval mode: mean = running_mean, inv_std = 1 / sqrt(running_var + eps) (in double).
  virtual void batchnorm_inference_stats(int64_t c, const float* running_mean, const float* running_var, double eps,
                                         float* mean, float* inv_std) = 0;
  // Training-mode backward in one call: dgamma += Σ dy·xhat, dbeta += Σ dy (sums in double,
  // rounded to float, then added), dx as batchnorm_backward_input with count = n·hw.
  virtual void batchnorm_backward_training(int64_t n, int64_t c, int64_t hw, const float* x, const float* dy,
                                           const float* mean, const float* inv_std, const float* gamma,
                                           float* dgamma, float* dbeta, float* dx) = 0;

  // ---- Parameter-free layers -------------------------------------------------------------
  virtual void relu_forward(int64_t count, float* x) = 0;  // in place
  // dx = dy where y > 0 (may be in place: dx == dy).
  virtual void relu_backward(int64_t count, const float* y, const float* dy, float* dx) = 0;
  // Max pooling; argmax[i] is the input-plane index of output i's maximum (first wins).
  virtual void maxpool_forward(const PoolShape& s, const float* x, float* y, int32_t* argmax) = 0;
  virtual void maxpool_backward(const PoolShape& s, const float* dy, const int32_t* argmax, float* dx) = 0;
  // y[p] = mean of plane p of x (hw values); dx over plane p = dy[p] / hw.
  virtual void global_avg_pool_forward(int64_t planes, int64_t hw, const float* x, float* y) = 0;
  virtual void global_avg_pool_backward(int64_t planes, int64_t hw, const float* dy, float* dx) = 0;
  // Each h×w plane of x inside zeros, `pad` wide on every side; backward takes the inside back.
  virtual void zero_pad_forward(int64_t planes, int64_t h, int64_t w, int64_t pad, const float* x, float* y) = 0;
  virtual void zero_pad_backward(int64_t planes, int64_t h, int64_t w, int64_t pad, const float* dy, float* dx) = 0;

  // ---- Elementwise -----------------------------------------------------------------------
  // a[i] += b[i] (residual connections).
  virtual void add_into(int64_t count, float* a, const float* b) = 0;
  // x[i] *= factor (the loss scaler's gradient scaling).
  virtual void scale(int64_t count, float* x, float factor) = 0;
  // out[i] = a[i] * b[i] (out may be a or b): dropout's mask, forward and backward.
  virtual void multiply(int64_t count, const float* a, const float* b, float* out) = 0;

  // ---- Loss ------------------------------------------------------------------------------
  // Softmax cross-entropy over rows of logits (rows×classes) with `labels` (host memory,
  // `rows` values, already checked to be in [0, classes)): grad = (softmax - onehot) / rows,
  // returns the mean loss (0 for no rows). Per row: the maximum, log-sum-exp in double, the
  // gradient rounded to float per element.
  virtual double softmax_cross_entropy(int64_t rows, int64_t classes, const float* logits, const int32_t* labels,
                                       float* grad) = 0;
  // Rows whose first maximum is at the label (labels as above).
  virtual int64_t count_correct(int64_t rows, int64_t classes, const float* logits, const int32_t* labels) = 0;

  // ---- Optimizer steps and loss scaling, for many tensors at once ------------------------
  // One parameter's memory for an optimizer step.
  struct UpdateTensors {
    float* param = nullptr;
    const float* grad = nullptr;
    float* state1 = nullptr;  // SGD: momentum buffer (null without momentum); Adam: exp_avg; Adadelta: square_avg
    float* state2 = nullptr;  // Adam: exp_avg_sq; Adadelta: acc_delta
    int64_t count = 0;
  };
  // torch.optim.SGD's update (1.13), element by element in float32:
  //   d = grad (+ weight_decay·param where weight_decay != 0);
  //   with a momentum buffer: buf = first ? d : buf·momentum + keep·d, and
  //   d = nesterov ? d + momentum·buf : buf;  param = param + neg_lr·d.
  // first: this step creates the momentum buffers (PyTorch's copy of the update).
  struct SgdStep {
    float neg_lr = 0, momentum = 0, weight_decay = 0;  // neg_lr = -lr
    float keep = 1;  // 1 - dampening, computed in double and rounded (PyTorch's alpha)
    bool nesterov = false, first = false;
  };
  virtual void sgd_step(std::span<const UpdateTensors> tensors, const SgdStep& step) = 0;
  // torch.optim.Adam's update (1.13, amsgrad off; weight decay added to the gradient), with
  // PyTorch's groupings: m = m·beta1 + (1 - beta1)·g; v = v·beta2 + ((1 - beta2)·g)·g;
  // param = param + (neg_step_size·m) / (sqrt(v) / bias_correction2_sqrt + eps).
  // neg_step_size = -lr / bias_correction1 and bias_correction2_sqrt = sqrt(bias_correction2)
  // are computed by the caller in double; one_minus_beta* are 1 - beta* in double, rounded.
  struct AdamStep {
    float neg_step_size = 0, bias_correction2_sqrt = 1, beta1 = 0.9f, one_minus_beta1 = 0.1f, beta2 = 0.999f,
          one_minus_beta2 = 0.001f, eps = 1e-8f, weight_decay = 0;
  };
  virtual void adam_step(std::span<const UpdateTensors> tensors, const AdamStep& step) = 0;
  // torch.optim.Adadelta's update (1.13): square_avg = square_avg·rho + ((1 - rho)·g)·g;
  // delta = sqrt(acc_delta + eps) / sqrt(square_avg + eps) · g;
  // acc_delta = acc_delta·rho + ((1 - rho)·delta)·delta; param = param + neg_lr·delta.
  // one_minus_rho is 1 - rho computed in double and rounded.
  struct AdadeltaStep {
    float neg_lr = 0, rho = 0.9f, one_minus_rho = 0.1f, eps = 1e-6f, weight_decay = 0;
  };
  virtual void adadelta_step(std::span<const UpdateTensors> tensors, const AdadeltaStep& step) = 0;
  // For each tensor: found |= any element not finite (before scaling); then x *= inv_scale.
  // Returns found.
  virtual bool unscale_and_check(std::span<float* const> tensors, std::span<const int64_t> counts,
                                 float inv_scale) = 0;
};

// The CPU's kernels.
Kernels& cpu_kernels();
// The kernels of a device: cpu_kernels() for the CPU, the GPU's for CUDA (kolo::Error in a
// build without CUDA, or for a device that does not exist).
Kernels& kernels(Device device);

}  // namespace kolo::models
