// Elementwise and per-plane kernels: fills, ReLU, residual adds, scaling, products, bias, global
// average pooling, zero padding, and casts between float32 and float16/bfloat16.
#include "models/cuda/launchers.h"
#include "models/cuda/launch.cuh"
#include "models/cuda/reduced.cuh"

namespace kolo::models::cuda::launch {
namespace {

__global__ void fill_kernel(int64_t n, float* x, float v) {
  KOLO_GRID_LOOP(i, n) x[i] = v;
}
__global__ void relu_forward_kernel(int64_t n, float* x) {
  KOLO_GRID_LOOP(i, n) x[i] = x[i] > 0.0f ? x[i] : 0.0f;  // NaN -> 0, as the CPU kernels
}
__global__ void relu_backward_kernel(int64_t n, const float* y, const float* dy, float* dx) {
  KOLO_GRID_LOOP(i, n) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}
__global__ void add_into_kernel(int64_t n, float* a, const float* b) {
  KOLO_GRID_LOOP(i, n) a[i] += b[i];
}
__global__ void scale_kernel(int64_t n, float* x, float f) {
  KOLO_GRID_LOOP(i, n) x[i] *= f;
}
__global__ void multiply_kernel(int64_t n, const float* a, const float* b, float* out) {
  KOLO_GRID_LOOP(i, n) out[i] = a[i] * b[i];
}
__global__ void add_doubles_kernel(int64_t n, const double* src, float* dst) {
  KOLO_GRID_LOOP(i, n) dst[i] += static_cast<float>(src[i]);
}
__global__ void add_channel_bias_kernel(int64_t total, Divisor hw, Divisor c, float* y, const float* b) {
  KOLO_GRID_LOOP(i, total) y[i] += b[c.mod(hw.div(i))];
}

// One warp per plane; lanes sum in double, then a shuffle tree.
__global__ void global_avg_pool_forward_kernel(int64_t planes, int64_t hw, const float* x, float* y) {
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (warp >= planes) return;
  const float* in = x + warp * hw;
  double sum = 0;
  for (int64_t j = lane; j < hw; j += 32) sum += in[j];
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  if (lane == 0) y[warp] = static_cast<float>(sum / double(hw));
}
__global__ void global_avg_pool_backward_kernel(int64_t total, Divisor hw, const float* dy, float* dx) {
  KOLO_GRID_LOOP(i, total) dx[i] = dy[hw.div(i)] / static_cast<float>(hw.d);
}

__global__ void zero_pad_forward_kernel(int64_t total, int64_t h, int64_t w, int64_t pad, const float* x, float* y) {
  const int64_t H = h + 2 * pad, W = w + 2 * pad;
  KOLO_GRID_LOOP(i, total) {
    const int64_t col = i % W, row = (i / W) % H, plane = i / (W * H);
    const int64_t r = row - pad, k = col - pad;
    y[i] = (r >= 0 && r < h && k >= 0 && k < w) ? x[(plane * h + r) * w + k] : 0.0f;
  }
}
__global__ void zero_pad_backward_kernel(int64_t total, int64_t h, int64_t w, int64_t pad, const float* dy,
                                         float* dx) {
  const int64_t H = h + 2 * pad, W = w + 2 * pad;
  KOLO_GRID_LOOP(i, total) {
    const int64_t k = i % w, r = (i / w) % h, plane = i / (w * h);
    dx[i] = dy[(plane * H + r + pad) * W + k + pad];
  }
}

template <typename T>
__global__ void to_reduced_kernel(int64_t n, const float* src, T* dst) {
  KOLO_GRID_LOOP(i, n) dst[i] = from_float<T>(src[i]);
}
template <typename T>
__global__ void from_reduced_kernel(int64_t n, const T* src, float* dst, bool accumulate) {
  KOLO_GRID_LOOP(i, n) {
    const float v = to_float(src[i]);
    dst[i] = accumulate ? dst[i] + v : v;
  }
}

}  // namespace

void fill(cudaStream_t s, int64_t count, float* x, float value) {
  if (count == 0) return;
  fill_kernel<<<blocks_for(count), kThreads, 0, s>>>(count, x, value);
  KOLO_CHECK_LAUNCH();
}
void relu_forward(cudaStream_t s, int64_t count, float* x) {
  if (count == 0) return;
  relu_forward_kernel<<<blocks_for(count), kThreads, 0, s>>>(count, x);
  KOLO_CHECK_LAUNCH();
}
void relu_backward(cudaStream_t s, int64_t count, const float* y, const float* dy, float* dx) {
  if (count == 0) return;
  relu_backward_kernel<<<blocks_for(count), kThreads, 0, s>>>(count, y, dy, dx);
  KOLO_CHECK_LAUNCH();
}
void add_into(cudaStream_t s, int64_t count, float* a, const float* b) {
  if (count == 0) return;
  add_into_kernel<<<blocks_for(count), kThreads, 0, s>>>(count, a, b);
  KOLO_CHECK_LAUNCH();
}
void scale(cudaStream_t s, int64_t count, float* x, float factor) {
  if (count == 0) return;
  scale_kernel<<<blocks_for(count), kThreads, 0, s>>>(count, x, factor);
  KOLO_CHECK_LAUNCH();
}
void multiply(cudaStream_t s, int64_t count, const float* a, const float* b, float* out) {
  if (count == 0) return;
  multiply_kernel<<<blocks_for(count), kThreads, 0, s>>>(count, a, b, out);
  KOLO_CHECK_LAUNCH();
}
void add_doubles(cudaStream_t s, int64_t count, const double* src, float* dst) {
  if (count == 0) return;
  add_doubles_kernel<<<blocks_for(count), kThreads, 0, s>>>(count, src, dst);
  KOLO_CHECK_LAUNCH();
}
void add_channel_bias(cudaStream_t s, int64_t n, int64_t c, int64_t hw, float* y, const float* b) {
  const int64_t total = n * c * hw;
  if (total == 0) return;
  add_channel_bias_kernel<<<blocks_for(total), kThreads, 0, s>>>(total, Divisor(hw, total), Divisor(c, total / hw),
                                                                  y, b);
  KOLO_CHECK_LAUNCH();
}
void global_avg_pool_forward(cudaStream_t s, int64_t planes, int64_t hw, const float* x, float* y) {
  if (planes == 0) return;
  const int64_t threads = planes * 32;
  global_avg_pool_forward_kernel<<<static_cast<unsigned>((threads + kThreads - 1) / kThreads), kThreads, 0, s>>>(
      planes, hw, x, y);
  KOLO_CHECK_LAUNCH();
}
void global_avg_pool_backward(cudaStream_t s, int64_t planes, int64_t hw, const float* dy, float* dx) {
  const int64_t total = planes * hw;
  if (total == 0) return;
  global_avg_pool_backward_kernel<<<blocks_for(total), kThreads, 0, s>>>(total, Divisor(hw, total), dy, dx);
  KOLO_CHECK_LAUNCH();
}
void zero_pad_forward(cudaStream_t s, int64_t planes, int64_t h, int64_t w, int64_t pad, const float* x, float* y) {
  const int64_t total = planes * (h + 2 * pad) * (w + 2 * pad);
  if (total == 0) return;
  zero_pad_forward_kernel<<<blocks_for(total), kThreads, 0, s>>>(total, h, w, pad, x, y);
  KOLO_CHECK_LAUNCH();
}
void zero_pad_backward(cudaStream_t s, int64_t planes, int64_t h, int64_t w, int64_t pad, const float* dy,
                       float* dx) {
  const int64_t total = planes * h * w;
  if (total == 0) return;
  zero_pad_backward_kernel<<<blocks_for(total), kThreads, 0, s>>>(total, h, w, pad, dy, dx);
  KOLO_CHECK_LAUNCH();
}

void to_reduced(cudaStream_t s, int64_t count, const float* src, void* dst, DType reduced) {
  check_reduced(reduced);
  if (count == 0) return;
  if (reduced == DType::Float16)
    to_reduced_kernel<<<blocks_for(count), kThreads, 0, s>>>(count, src, static_cast<__half*>(dst));
  else
    to_reduced_kernel<<<blocks_for(count), kThreads, 0, s>>>(count, src, static_cast<__nv_bfloat16*>(dst));
  KOLO_CHECK_LAUNCH();
}
void from_reduced(cudaStream_t s, int64_t count, const void* src, DType reduced, float* dst, bool accumulate) {
  check_reduced(reduced);
  if (count == 0) return;
  if (reduced == DType::Float16)
    from_reduced_kernel<<<blocks_for(count), kThreads, 0, s>>>(count, static_cast<const __half*>(src), dst,
                                                                 accumulate);
  else
    from_reduced_kernel<<<blocks_for(count), kThreads, 0, s>>>(count, static_cast<const __nv_bfloat16*>(src), dst,
                                                                 accumulate);
  KOLO_CHECK_LAUNCH();
}

}  // namespace kolo::models::cuda::launch
