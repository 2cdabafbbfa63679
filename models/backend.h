// The kernel boundary of the model layer: layers describe what to compute, a Backend
// computes it. The CPU backend is models/cpu/ (on Eigen), the CUDA one models/cuda/ (cuDNN,
// cuBLAS and kernels of its own). All pointers are to contiguous NCHW float32 memory the
// backend can address (host memory for the CPU, the GPU's for CUDA) unless said otherwise;
// "accumulate" outputs are added to, the others overwritten.
#pragma once

#include <cstdint>
#include <span>
#include <string>

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

  // y[p] = mean of plane p of x (hw values); dx over plane p = dy[p] / hw.
  virtual void global_avg_pool_forward(int64_t planes, int64_t hw, const float* x, float* y) = 0;
  virtual void global_avg_pool_backward(int64_t planes, int64_t hw, const float* dy, float* dx) = 0;
  // Each h×w plane of x inside zeros, `pad` wide on every side; backward takes the inside back.
  virtual void zero_pad_forward(int64_t planes, int64_t h, int64_t w, int64_t pad, const float* x, float* y) = 0;
  virtual void zero_pad_backward(int64_t planes, int64_t h, int64_t w, int64_t pad, const float* dy, float* dx) = 0;

  // ---- Device-resident steps ------------------------------------------------------------
  // What the CPU's callers do on the host with plain loops (batch-norm statistics, the loss,
  // optimizer updates, loss scaling), for a backend whose memory the host cannot read. The
  // CPU backend does not implement them; the defaults throw kolo::Error naming the step.

  // Training-mode batch norm in one call: per-channel mean and biased variance in double
  // (two passes, as channel_sums and channel_centered_squares), save_mean and save_inv_std
  // (float, C values), the running statistics updated as PyTorch does (unbiased variance,
  // running = (1 - momentum)·running + momentum·batch), num_batches_tracked incremented,
  // and y = batchnorm_apply(...). Requires n·hw > 1.
  virtual void batchnorm_forward_training(int64_t n, int64_t c, int64_t hw, const float* x, const float* gamma,
                                          const float* beta, double eps, double momentum, float* running_mean,
                                          float* running_var, float* num_batches_tracked, float* save_mean,
                                          float* save_inv_std, float* y);
  // SyncBatchNorm's end of the same step, after the caller has summed the statistics across
  // ranks on the host: from `mean` and `squares` (Σ(x - mean)², host arrays of c doubles)
  // over `count` values per channel, as batchnorm_forward_training does after its two passes
  // (save_mean, save_inv_std, running statistics, num_batches_tracked); no normalisation.
  virtual void batchnorm_finish_statistics(int64_t c, const double* mean, const double* squares, double count,
                                           double eps, double momentum, float* running_mean, float* running_var,
                                           float* num_batches_tracked, float* save_mean, float* save_inv_std);
  // Eval mode: mean = running_mean, inv_std = 1 / sqrt(running_var + eps) (in double).
  virtual void batchnorm_inference_stats(int64_t c, const float* running_mean, const float* running_var, double eps,
                                         float* mean, float* inv_std);
  // Training-mode backward in one call: dgamma += Σ dy·xhat, dbeta += Σ dy (sums in double),
  // dx as batchnorm_backward_input with count = n·hw.
  virtual void batchnorm_backward_training(int64_t n, int64_t c, int64_t hw, const float* x, const float* dy,
                                           const float* mean, const float* inv_std, const float* gamma,
                                           float* dgamma, float* dbeta, float* dx);

  // Softmax cross-entropy over rows of logits (rows×classes) with labels (int32, in the
  // backend's memory, already checked to be in range): grad = (softmax - onehot) / rows,
  // returns the mean loss (computed in double, as the CPU's loss.cc).
  virtual double softmax_cross_entropy(int64_t rows, int64_t classes, const float* logits, const int32_t* labels,
                                       float* grad);
  // Rows whose first maximum is at the label.
  virtual int64_t count_correct(int64_t rows, int64_t classes, const float* logits, const int32_t* labels);

  // One parameter's memory for an optimizer step.
  struct UpdateTensors {
    float* param = nullptr;
    const float* grad = nullptr;
    float* state1 = nullptr;  // SGD: momentum buffer (null without momentum); Adam: exp_avg; Adadelta: square_avg
    float* state2 = nullptr;  // Adam: exp_avg_sq; Adadelta: acc_delta
    int64_t count = 0;
  };
  // torch.optim.SGD's update for every tensor at once (models/optim/sgd.cc has the rules):
  // first: the momentum buffers are created from this step's update.
  struct SgdStep {
    float neg_lr = 0, momentum = 0, weight_decay = 0;  // neg_lr = -lr
    float keep = 1;  // 1 - dampening, computed in double and rounded (PyTorch's alpha)
    bool nesterov = false, first = false;
  };
  virtual void sgd_step(std::span<const UpdateTensors> tensors, const SgdStep& step);
  // torch.optim.Adam's update (models/optim/adam.cc): neg_step_size = -lr / bias_correction1,
  // bias_correction2_sqrt = sqrt(bias_correction2), both computed by the caller in double.
  // one_minus_beta* are 1 - beta* computed in double and rounded, as adam.cc does.
  struct AdamStep {
    float neg_step_size = 0, bias_correction2_sqrt = 1, beta1 = 0.9f, one_minus_beta1 = 0.1f, beta2 = 0.999f,
          one_minus_beta2 = 0.001f, eps = 1e-8f, weight_decay = 0;
  };
  virtual void adam_step(std::span<const UpdateTensors> tensors, const AdamStep& step);
  // torch.optim.Adadelta's update (models/optim/adadelta.cc); one_minus_rho is 1 - rho
  // computed in double and rounded, as adadelta.cc does.
  struct AdadeltaStep {
    float neg_lr = 0, rho = 0.9f, one_minus_rho = 0.1f, eps = 1e-6f, weight_decay = 0;
  };
  virtual void adadelta_step(std::span<const UpdateTensors> tensors, const AdadeltaStep& step);

  // x[i] *= factor.
  virtual void scale(int64_t count, float* x, float factor);
  // out[i] = a[i] * b[i] (out may be a or b): dropout's mask, forward and backward.
  virtual void multiply(int64_t count, const float* a, const float* b, float* out);
  // For each tensor: found |= any element not finite; then x *= inv_scale. Returns found.
  virtual bool unscale_and_check(std::span<float* const> tensors, std::span<const int64_t> counts,
                                 float inv_scale);
};

// The device-resident steps' defaults (inline, so that other backends' libraries need
// nothing from kolo_models).
[[noreturn]] inline void host_step(const char* step) {
  throw Error(StatusCode::InvalidArgument, std::string("kolo: internal error: ") + step +
                                               " is a device-resident step; this backend's callers do it on the host");
}

inline void Backend::batchnorm_forward_training(int64_t, int64_t, int64_t, const float*, const float*, const float*, double,
                                         double, float*, float*, float*, float*, float*, float*) {
  host_step("batchnorm_forward_training");
}
inline void Backend::batchnorm_finish_statistics(int64_t, const double*, const double*, double, double, double, float*,
                                                 float*, float*, float*, float*) {
  host_step("batchnorm_finish_statistics");
}
inline void Backend::batchnorm_inference_stats(int64_t, const float*, const float*, double, float*, float*) {
  host_step("batchnorm_inference_stats");
}
inline void Backend::batchnorm_backward_training(int64_t, int64_t, int64_t, const float*, const float*, const float*,
                                          const float*, const float*, float*, float*, float*) {
  host_step("batchnorm_backward_training");
}
inline double Backend::softmax_cross_entropy(int64_t, int64_t, const float*, const int32_t*, float*) {
  host_step("softmax_cross_entropy");
}
inline int64_t Backend::count_correct(int64_t, int64_t, const float*, const int32_t*) { host_step("count_correct"); }
inline void Backend::sgd_step(std::span<const UpdateTensors>, const SgdStep&) { host_step("sgd_step"); }
inline void Backend::adam_step(std::span<const UpdateTensors>, const AdamStep&) { host_step("adam_step"); }
inline void Backend::adadelta_step(std::span<const UpdateTensors>, const AdadeltaStep&) { host_step("adadelta_step"); }
inline void Backend::scale(int64_t, float*, float) { host_step("scale"); }
inline void Backend::multiply(int64_t, const float*, const float*, float*) { host_step("multiply"); }
inline bool Backend::unscale_and_check(std::span<float* const>, std::span<const int64_t>, float) {
  host_step("unscale_and_check");
}


// The CPU backend (what layers used before tensors had devices).
Backend& compute();
// The backend of a device: compute() for the CPU, the GPU's for CUDA (kolo::Error in a
// build without CUDA, or for a device that does not exist).
Backend& compute(Device device);

}  // namespace kolo::models
