// The CUDA backend: convolutions through cuDNN (legacy API; algorithms measured once per
// shape and cached, workspaces from the caching allocator), linear layers through cuBLAS,
// and kolo's own kernels for the rest (models/cuda/*.cu). Everything is enqueued on the
// device's compute stream; only the calls that return a value to the host (the loss, the
// accuracy, the overflow check, and the double statistics of the host-side batch-norm
// interface) wait for it.
//
// Pointers are device memory, except the double arrays of channel_sums,
// channel_centered_squares, batchnorm_grad_sums, batchnorm_backward_input and
// batchnorm_finish_statistics, which are the host's (those serve the host-side batch-norm
// path: SyncBatchNorm, whose reducer sums host vectors across ranks, and the tests against
// the CPU backend; BatchNorm2d on a GPU without a reducer uses the device-resident calls).
#pragma once

#include <functional>
#include <mutex>
#include <span>
#include <vector>

#include "models/backend.h"
#include "models/cuda/conv_algorithms.h"
#include "models/cuda/device_context.h"
#include "models/cuda/kernels.h"

namespace kolo::models::cuda {

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(DeviceContext& context);

  void conv2d_forward(const ConvShape& s, const float* x, const float* w, const float* b, float* y) override;
  void conv2d_backward(const ConvShape& s, const float* x, const float* w, const float* dy, float* dx, float* dw,
                       float* db) override;

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

  void relu_forward(int64_t count, float* x) override;
  void relu_backward(int64_t count, const float* y, const float* dy, float* dx) override;
  void maxpool_forward(const PoolShape& s, const float* x, float* y, int32_t* argmax) override;
  void maxpool_backward(const PoolShape& s, const float* dy, const int32_t* argmax, float* dx) override;

  void linear_forward(int64_t rows, int64_t in, int64_t out, const float* x, const float* w, const float* b,
                      float* y) override;
  void linear_backward(int64_t rows, int64_t in, int64_t out, const float* x, const float* w, const float* dy,
                       float* dx, float* dw, float* db) override;

  void add_into(int64_t count, float* a, const float* b) override;
  void global_avg_pool_forward(int64_t planes, int64_t hw, const float* x, float* y) override;
  void global_avg_pool_backward(int64_t planes, int64_t hw, const float* dy, float* dx) override;
  void zero_pad_forward(int64_t planes, int64_t h, int64_t w, int64_t pad, const float* x, float* y) override;
  void zero_pad_backward(int64_t planes, int64_t h, int64_t w, int64_t pad, const float* dy, float* dx) override;

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

  double softmax_cross_entropy(int64_t rows, int64_t classes, const float* logits, const int32_t* labels,
                               float* grad) override;
  int64_t count_correct(int64_t rows, int64_t classes, const float* logits, const int32_t* labels) override;
  void sgd_step(std::span<const UpdateTensors> tensors, const SgdStep& step) override;
  void adam_step(std::span<const UpdateTensors> tensors, const AdamStep& step) override;
  void adadelta_step(std::span<const UpdateTensors> tensors, const AdadeltaStep& step) override;
  void scale(int64_t count, float* x, float factor) override;
  void multiply(int64_t count, const float* a, const float* b, float* out) override;
  bool unscale_and_check(std::span<float* const> tensors, std::span<const int64_t> counts, float inv_scale) override;

  ConvAlgorithmCache& algorithms() { return algorithms_; }

 private:
  // Device copies of a multi-tensor pass's slot and chunk tables, uploaded again only when
  // the tensors change (in training, never after the first step).
  struct MultiTensorTable {
    std::vector<kernels::TensorSlot> slots;
    std::vector<kernels::Chunk> chunks;
    std::shared_ptr<void> device_slots, device_chunks;
  };
  MultiTensorTable& table(MultiTensorTable& cache, std::vector<kernels::TensorSlot> slots);
  // An optimizer's multi-tensor launch over `tensors`, with `cache`'s tables.
  using MultiTensorLaunch =
      std::function<void(cudaStream_t, const kernels::TensorSlot*, const kernels::Chunk*, int64_t chunk_count)>;
  void update(MultiTensorTable& cache, std::span<const UpdateTensors> tensors, const MultiTensorLaunch& launch);
  // Scratch for per-channel double sums.
  std::shared_ptr<void> doubles(std::size_t count) { return context_.allocate(count * sizeof(double)); }
  // out[ch] += Σ of channel ch of (n, c, hw) data, summed in double (bias gradients).
  void add_channel_sums(int64_t n, int64_t c, int64_t hw, const float* x, float* out);
  // Batch norm's backward sums on the device, as 3·c doubles: Σdy | Σdy·(x - mean) |
  // Σdy·xhat; dgamma += Σdy·xhat and dbeta += Σdy on the way.
  std::shared_ptr<void> grad_sums(int64_t n, int64_t c, int64_t hw, const float* x, const float* dy,
                                  const float* mean, const float* inv_std, float* dgamma, float* dbeta);

  DeviceContext& context_;
  ConvAlgorithmCache algorithms_;
  std::mutex tables_mutex_;
  MultiTensorTable sgd_table_, adam_table_, adadelta_table_, unscale_table_;
};

}  // namespace kolo::models::cuda
