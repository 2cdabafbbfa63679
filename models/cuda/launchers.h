// The CUDA kernels of kolo's model layer, as host functions that launch them on a stream
// (the .cu files next to this one). Plain C++ here, so that CudaKernels' C++ files need no
// nvcc. Every launcher checks the launch and throws kolo::Error on failure; none waits.
// Pointers are device memory; shapes as in models/kernels.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "kolo/kolo.h"
#include "models/kernels.h"

namespace kolo::models::cuda::launch {

// ---- elementwise.cu ----
void fill(cudaStream_t s, int64_t count, float* x, float value);
void relu_forward(cudaStream_t s, int64_t count, float* x);
void relu_backward(cudaStream_t s, int64_t count, const float* y, const float* dy, float* dx);
void add_into(cudaStream_t s, int64_t count, float* a, const float* b);
void scale(cudaStream_t s, int64_t count, float* x, float factor);
// out[i] = a[i] * b[i].
void multiply(cudaStream_t s, int64_t count, const float* a, const float* b, float* out);
// dst[i] += (float) src[i] (bias gradients from double sums).
void add_doubles(cudaStream_t s, int64_t count, const double* src, float* dst);
// y[n, c, :] += b[c] over planes of hw values (conv bias); y[r, o] += b[o] is hw = 1.
void add_channel_bias(cudaStream_t s, int64_t n, int64_t c, int64_t hw, float* y, const float* b);
void global_avg_pool_forward(cudaStream_t s, int64_t planes, int64_t hw, const float* x, float* y);
void global_avg_pool_backward(cudaStream_t s, int64_t planes, int64_t hw, const float* dy, float* dx);
void zero_pad_forward(cudaStream_t s, int64_t planes, int64_t h, int64_t w, int64_t pad, const float* x, float* y);
void zero_pad_backward(cudaStream_t s, int64_t planes, int64_t h, int64_t w, int64_t pad, const float* dy, float* dx);
// Between float32 and float16/bfloat16 (`reduced`): dst = src, or dst += src (accumulate,
// into float32 only).
void to_reduced(cudaStream_t s, int64_t count, const float* src, void* dst, DType reduced);
void from_reduced(cudaStream_t s, int64_t count, const void* src, DType reduced, float* dst, bool accumulate);

// ---- layout.cu ----
// The same casts, also transposing: (n, c, hw) float32 data (NCHW) to (n, hw, c) in the
// reduced type (NHWC, channels-last), and back into NCHW float32 (dst = src, or dst += src).
// A filter (k, c, r·s) in NHWC is cuDNN's KRSC layout.
void to_reduced_nhwc(cudaStream_t s, int64_t n, int64_t c, int64_t hw, const float* src, void* dst, DType reduced);
void from_reduced_nhwc(cudaStream_t s, int64_t n, int64_t c, int64_t hw, const void* src, DType reduced, float* dst,
                       bool accumulate);

// ---- pooling.cu ----
void maxpool_forward(cudaStream_t s, const PoolShape& shape, const float* x, float* y, int32_t* argmax);
void maxpool_backward(cudaStream_t s, const PoolShape& shape, const float* dy, const int32_t* argmax, float* dx);

// ---- batchnorm.cu ----
// Per-channel partial sums of (n, c, hw) data in double: `slices` blocks per channel write
// partial[ch * slices + slice]; finish with reduce_partials. Modes: Σx; Σ(x - mean)²;
// Σdy and Σdy·(x - mean) (two arrays, for the backward pass).
int channel_slices(int64_t n, int64_t c, int64_t hw);
void channel_partial_sums(cudaStream_t s, int64_t n, int64_t c, int64_t hw, int slices, const float* x,
                          double* partial);
void channel_partial_centered_squares(cudaStream_t s, int64_t n, int64_t c, int64_t hw, int slices, const float* x,
                                      const double* mean, double* partial);
void channel_partial_grad_sums(cudaStream_t s, int64_t n, int64_t c, int64_t hw, int slices, const float* x,
                               const float* dy, const float* mean, double* partial_dy, double* partial_dy_xc);
// out[ch] = (Σ over slices of partial[ch * slices + slice]) / divisor, summed in slice order.
void reduce_partials(cudaStream_t s, int64_t c, int slices, const double* partial, double divisor, double* out);
// After the two passes (mean = Σx / count, squares = Σ(x - mean)²): save_mean, save_inv_std and the running statistics (PyTorch's
// update), num_batches_tracked += 1.
void batchnorm_finish_statistics(cudaStream_t s, int64_t c, const double* mean, const double* squares, double count,
                                 double eps, float momentum, float* running_mean, float* running_var,
                                 float* num_batches_tracked, float* save_mean, float* save_inv_std);
void batchnorm_inference_stats(cudaStream_t s, int64_t c, const float* running_mean, const float* running_var,
                               double eps, float* mean, float* inv_std);
void batchnorm_apply(cudaStream_t s, int64_t n, int64_t c, int64_t hw, const float* x, const float* mean,
                     const float* inv_std, const float* gamma, const float* beta, float* y);
// dgamma += Σdy·xhat, dbeta += Σdy (float), from the double sums (Σdy·(x - mean) · inv_std).
void batchnorm_param_grads(cudaStream_t s, int64_t c, const double* sum_dy, const double* sum_dy_xc,
                           const float* inv_std, float* dgamma, float* dbeta, double* sum_dy_xhat);
void batchnorm_backward_input(cudaStream_t s, int64_t n, int64_t c, int64_t hw, const float* x, const float* dy,
                              const float* mean, const float* inv_std, const float* gamma, const double* sum_dy,
                              const double* sum_dy_xhat, double count, float* dx);

// ---- loss.cu ----
// Per row: loss_rows[r] = logsumexp(z) - z[label] (double); grad = (softmax - onehot) / rows.
void softmax_cross_entropy(cudaStream_t s, int64_t rows, int64_t classes, const float* logits, const int32_t* labels,
                           float* grad, double* loss_rows);
// correct[r] = 1 if the row's first maximum is at its label.
void correct_rows(cudaStream_t s, int64_t rows, int64_t classes, const float* logits, const int32_t* labels,
                  double* correct);
// out[0] = Σ values (double, one block, in a fixed order).
void sum_doubles(cudaStream_t s, int64_t count, const double* values, double* out);

// ---- optim.cu ----
// The tensors of a multi-tensor pass, and the chunks the blocks take (built on the host,
// kernels_multi_tensor.cc).
struct TensorSlot {
  float* a = nullptr;        // param, or the tensor to unscale
  const float* g = nullptr;  // grad
  float* s1 = nullptr;       // momentum / exp_avg / square_avg
  float* s2 = nullptr;       // exp_avg_sq / acc_delta
  int64_t count = 0;
};
struct Chunk {
  int32_t tensor = 0;
  int64_t begin = 0, end = 0;
};
void sgd_step(cudaStream_t s, const TensorSlot* slots, const Chunk* chunks, int64_t chunk_count,
              const Kernels::SgdStep& step);
void adam_step(cudaStream_t s, const TensorSlot* slots, const Chunk* chunks, int64_t chunk_count,
               const Kernels::AdamStep& step);
void adadelta_step(cudaStream_t s, const TensorSlot* slots, const Chunk* chunks, int64_t chunk_count,
                   const Kernels::AdadeltaStep& step);
// found[0] = 1 if any element is inf/NaN (never reset here); then a *= inv_scale.
void unscale_and_check(cudaStream_t s, const TensorSlot* slots, const Chunk* chunks, int64_t chunk_count,
                       float inv_scale, int32_t* found);

}  // namespace kolo::models::cuda::launch
