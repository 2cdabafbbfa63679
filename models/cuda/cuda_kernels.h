// The GPU's Kernels: convolutions through cuDNN (legacy API; algorithms measured once per
// shape and cached, workspaces from the caching allocator), linear layers through cuBLAS,
// and kolo's own CUDA kernels for the rest (models/cuda/*.cu, launched through
// launchers.h). Everything is enqueued on the device's compute stream; only the calls that
// return a value to the host (the loss, the accuracy, the overflow check, and the double
// statistics of the per-channel batch-norm passes) wait for it.
//
// Pointers are device memory, except where models/kernels.h says host memory: the double
// arrays of channel_sums, channel_centered_squares, batchnorm_grad_sums,
// batchnorm_backward_input and batchnorm_finish_statistics (SyncBatchNorm's reducer sums
// them across ranks on the host), and the labels of the loss (uploaded here).
//
// Host side, by file: kernels_single_launch.cc (one launch per call: ReLU, pooling,
// padding, elementwise), kernels_batchnorm.cc, kernels_loss.cc, kernels_multi_tensor.cc
// (optimizer steps, unscale-and-check), conv_cudnn.cc, linear_cublas.cc.
#pragma once

#include <functional>
#include <mutex>
#include <span>
#include <vector>

#include "models/kernels.h"
#include "models/cuda/conv_algorithms.h"
#include "models/cuda/device_context.h"
#include "models/cuda/launchers.h"

namespace kolo::models::cuda {

class CudaKernels final : public Kernels {
 public:
  explicit CudaKernels(DeviceContext& context);

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
    std::vector<launch::TensorSlot> slots;
    std::vector<launch::Chunk> chunks;
    std::shared_ptr<void> device_slots, device_chunks;
  };
  MultiTensorTable& table(MultiTensorTable& cache, std::vector<launch::TensorSlot> slots);
  // An optimizer's multi-tensor launch over `tensors`, with `cache`'s tables.
  using MultiTensorLaunch =
      std::function<void(cudaStream_t, const launch::TensorSlot*, const launch::Chunk*, int64_t chunk_count)>;
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
