// Batch-norm kernels with the CPU kernels' numerics: per-channel statistics in double in
// two passes (Σx, then Σ(x - mean)²), the same float formulas for normalising and for the
// input gradient. A channel's N·H·W values are split into `slices` ranges, one block each,
// whose partial sums are added in slice order by one thread per channel: deterministic,
// and no atomics on doubles.
#include "models/cuda/launchers.h"
#include "models/cuda/launch.cuh"

namespace kolo::models::cuda::launch {
namespace {

constexpr int kReduceThreads = 256;

// Tree sum of one double per thread over the block, into thread 0's return value.
__device__ double block_sum(double v, double* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int stride = kReduceThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) shared[threadIdx.x] += shared[threadIdx.x + stride];
    __syncthreads();
  }
  const double total = shared[0];
  __syncthreads();  // shared is reused by the next call
  return total;
}

// The slice of channel blockIdx.y this block covers: [begin, end) of the channel's n·hw
// values, value j at x[((j / hw)·c + ch)·hw + j % hw].
struct Slice {
  int64_t begin, end;
};
__device__ Slice slice_of(int64_t per_channel) {
  const int64_t slices = gridDim.x, s = blockIdx.x;
  return {per_channel * s / slices, per_channel * (s + 1) / slices};
}
__device__ int64_t at(int64_t j, int64_t c, const Divisor& hw, int64_t ch) {
  return (hw.div(j) * c + ch) * hw.d + hw.mod(j);
}

__global__ void partial_sums_kernel(int64_t n, int64_t c, Divisor hw, const float* x, double* partial) {
  __shared__ double shared[kReduceThreads];
  const int64_t ch = blockIdx.y;
  const Slice r = slice_of(n * hw.d);
  double sum = 0;
  for (int64_t j = r.begin + threadIdx.x; j < r.end; j += kReduceThreads) sum += x[at(j, c, hw, ch)];
  sum = block_sum(sum, shared);
  if (threadIdx.x == 0) partial[ch * gridDim.x + blockIdx.x] = sum;
}

__global__ void partial_centered_squares_kernel(int64_t n, int64_t c, Divisor hw, const float* x, const double* mean,
                                                double* partial) {
  __shared__ double shared[kReduceThreads];
  const int64_t ch = blockIdx.y;
  const double m = mean[ch];
  const Slice r = slice_of(n * hw.d);
  double sq = 0;
  for (int64_t j = r.begin + threadIdx.x; j < r.end; j += kReduceThreads) {
    const double d = double(x[at(j, c, hw, ch)]) - m;
    sq += d * d;
  }
  sq = block_sum(sq, shared);
  if (threadIdx.x == 0) partial[ch * gridDim.x + blockIdx.x] = sq;
}

__global__ void partial_grad_sums_kernel(int64_t n, int64_t c, Divisor hw, const float* x, const float* dy,
                                         const float* mean, double* partial_dy, double* partial_dy_xc) {
  __shared__ double shared[kReduceThreads];
  const int64_t ch = blockIdx.y;
  const double m = mean[ch];
  const Slice r = slice_of(n * hw.d);
  double s = 0, sx = 0;
  for (int64_t j = r.begin + threadIdx.x; j < r.end; j += kReduceThreads) {
    const int64_t i = at(j, c, hw, ch);
    const float g = dy[i];
    s += g;
    sx += double(g) * (double(x[i]) - m);
  }
  s = block_sum(s, shared);
  sx = block_sum(sx, shared);
  if (threadIdx.x == 0) {
    partial_dy[ch * gridDim.x + blockIdx.x] = s;
    partial_dy_xc[ch * gridDim.x + blockIdx.x] = sx;
  }
}

__global__ void reduce_partials_kernel(int64_t c, int slices, const double* partial, double divisor, double* out) {
  const int64_t ch = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (ch >= c) return;
  double sum = 0;
  for (int s = 0; s < slices; ++s) sum += partial[ch * slices + s];
  out[ch] = sum / divisor;
}

// As layers/batchnorm.cc: float momentum, the unbiased variance for running_var.
__global__ void finish_statistics_kernel(int64_t c, const double* mean, const double* squares, double count,
                                         double eps, float momentum, float* running_mean, float* running_var,
                                         float* num_batches_tracked, float* save_mean, float* save_inv_std) {
  const int64_t ch = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (ch >= c) return;
  const double var = squares[ch] / count;
  const float m = static_cast<float>(mean[ch]);
  save_mean[ch] = m;
  save_inv_std[ch] = static_cast<float>(1.0 / sqrt(var + eps));
  running_mean[ch] = (1 - momentum) * running_mean[ch] + momentum * m;
  running_var[ch] = (1 - momentum) * running_var[ch] + momentum * static_cast<float>(var * count / (count - 1));
  if (ch == 0) num_batches_tracked[0] += 1;
}

__global__ void inference_stats_kernel(int64_t c, const float* running_mean, const float* running_var, double eps,
                                       float* mean, float* inv_std) {
  const int64_t ch = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (ch >= c) return;
  mean[ch] = running_mean[ch];
  inv_std[ch] = static_cast<float>(1.0 / sqrt(double(running_var[ch]) + eps));
}

__global__ void apply_kernel(int64_t total, Divisor c, Divisor hw, const float* x, const float* mean,
                             const float* inv_std, const float* gamma, const float* beta, float* y) {
  KOLO_GRID_LOOP(i, total) {
    const int64_t ch = c.mod(hw.div(i));
    const float scale = inv_std[ch] * gamma[ch];
    const float shift = beta[ch] - mean[ch] * scale;
    y[i] = x[i] * scale + shift;
  }
}

__global__ void param_grads_kernel(int64_t c, const double* sum_dy, const double* sum_dy_xc, const float* inv_std,
                                   float* dgamma, float* dbeta, double* sum_dy_xhat) {
  const int64_t ch = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (ch >= c) return;
  const double xhat_sum = sum_dy_xc[ch] * inv_std[ch];
  sum_dy_xhat[ch] = xhat_sum;
  dbeta[ch] += static_cast<float>(sum_dy[ch]);
  dgamma[ch] += static_cast<float>(xhat_sum);
}

__global__ void backward_input_kernel(int64_t total, Divisor c, Divisor hw, const float* x, const float* dy,
                                      const float* mean, const float* inv_std, const float* gamma,
                                      const double* sum_dy, const double* sum_dy_xhat, double count, float* dx) {
  KOLO_GRID_LOOP(i, total) {
    const int64_t ch = c.mod(hw.div(i));
    const float istd = inv_std[ch];
    const float k = gamma[ch] * istd;
    const float mean_dy = static_cast<float>(sum_dy[ch] / count);
    const float slope = static_cast<float>(sum_dy_xhat[ch] / count) * istd;
    dx[i] = k * (dy[i] - mean_dy - (x[i] - mean[ch]) * slope);
  }
}

unsigned channel_blocks(int64_t c) { return static_cast<unsigned>((c + 127) / 128); }

}  // namespace

int channel_slices(int64_t n, int64_t c, int64_t hw) {
  // About 1024 blocks in all (a few per SM), each with at least ~4096 values to sum.
  const int64_t by_occupancy = (1024 + c - 1) / c;
  const int64_t by_size = (n * hw + 4095) / 4096;
  return static_cast<int>(std::clamp<int64_t>(std::min(by_occupancy, by_size), 1, 1024));
}

void channel_partial_sums(cudaStream_t s, int64_t n, int64_t c, int64_t hw, int slices, const float* x,
                          double* partial) {
  partial_sums_kernel<<<dim3(slices, static_cast<unsigned>(c)), kReduceThreads, 0, s>>>(n, c, Divisor(hw, n * hw), x,
                                                                                        partial);
  KOLO_CHECK_LAUNCH();
}

void channel_partial_centered_squares(cudaStream_t s, int64_t n, int64_t c, int64_t hw, int slices, const float* x,
                                      const double* mean, double* partial) {
  partial_centered_squares_kernel<<<dim3(slices, static_cast<unsigned>(c)), kReduceThreads, 0, s>>>(
      n, c, Divisor(hw, n * hw), x, mean, partial);
  KOLO_CHECK_LAUNCH();
}

void channel_partial_grad_sums(cudaStream_t s, int64_t n, int64_t c, int64_t hw, int slices, const float* x,
                               const float* dy, const float* mean, double* partial_dy, double* partial_dy_xc) {
  partial_grad_sums_kernel<<<dim3(slices, static_cast<unsigned>(c)), kReduceThreads, 0, s>>>(
      n, c, Divisor(hw, n * hw), x, dy, mean, partial_dy, partial_dy_xc);
  KOLO_CHECK_LAUNCH();
}

void reduce_partials(cudaStream_t s, int64_t c, int slices, const double* partial, double divisor, double* out) {
  reduce_partials_kernel<<<channel_blocks(c), 128, 0, s>>>(c, slices, partial, divisor, out);
  KOLO_CHECK_LAUNCH();
}

void batchnorm_finish_statistics(cudaStream_t s, int64_t c, const double* mean, const double* squares, double count,
                                 double eps, float momentum, float* running_mean, float* running_var,
                                 float* num_batches_tracked, float* save_mean, float* save_inv_std) {
  finish_statistics_kernel<<<channel_blocks(c), 128, 0, s>>>(c, mean, squares, count, eps, momentum, running_mean,
                                                             running_var, num_batches_tracked, save_mean,
                                                             save_inv_std);
  KOLO_CHECK_LAUNCH();
}

void batchnorm_inference_stats(cudaStream_t s, int64_t c, const float* running_mean, const float* running_var,
                               double eps, float* mean, float* inv_std) {
  inference_stats_kernel<<<channel_blocks(c), 128, 0, s>>>(c, running_mean, running_var, eps, mean, inv_std);
  KOLO_CHECK_LAUNCH();
}

void batchnorm_apply(cudaStream_t s, int64_t n, int64_t c, int64_t hw, const float* x, const float* mean,
                     const float* inv_std, const float* gamma, const float* beta, float* y) {
  const int64_t total = n * c * hw;
  if (total == 0) return;
  apply_kernel<<<blocks_for(total), kThreads, 0, s>>>(total, Divisor(c, n * c), Divisor(hw, total), x, mean, inv_std,
                                                      gamma, beta, y);
  KOLO_CHECK_LAUNCH();
}

void batchnorm_param_grads(cudaStream_t s, int64_t c, const double* sum_dy, const double* sum_dy_xc,
                           const float* inv_std, float* dgamma, float* dbeta, double* sum_dy_xhat) {
  param_grads_kernel<<<channel_blocks(c), 128, 0, s>>>(c, sum_dy, sum_dy_xc, inv_std, dgamma, dbeta, sum_dy_xhat);
  KOLO_CHECK_LAUNCH();
}

void batchnorm_backward_input(cudaStream_t s, int64_t n, int64_t c, int64_t hw, const float* x, const float* dy,
                              const float* mean, const float* inv_std, const float* gamma, const double* sum_dy,
                              const double* sum_dy_xhat, double count, float* dx) {
  const int64_t total = n * c * hw;
  if (total == 0) return;
  backward_input_kernel<<<blocks_for(total), kThreads, 0, s>>>(total, Divisor(c, n * c), Divisor(hw, total), x, dy,
                                                               mean, inv_std, gamma, sum_dy, sum_dy_xhat, count, dx);
  KOLO_CHECK_LAUNCH();
}

}  // namespace kolo::models::cuda::launch
