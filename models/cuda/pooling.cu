// Max pooling with the CPU kernels' exact semantics: argmax is the input-plane index of the
// first maximum in scan order (strictly greater wins; NaN wins), windows clipped at the
// padding. Backward gathers (each input sums the outputs that chose it, in output order, as
// the CPU's scatter adds them), so it needs no atomics and is deterministic.
#include "models/cuda/launchers.h"
#include "models/cuda/launch.cuh"

namespace kolo::models::cuda::launch {
namespace {

struct Dims {
  int64_t planes, H, W, P, Q, kernel, stride, padding;
};

__global__ void maxpool_forward_kernel(Dims d, const float* x, float* y, int32_t* argmax) {
  const int64_t total = d.planes * d.P * d.Q;
  KOLO_GRID_LOOP(i, total) {
    const int64_t q = i % d.Q, p = (i / d.Q) % d.P, plane = i / (d.P * d.Q);
    const float* in = x + plane * d.H * d.W;
    const int64_t h0 = p * d.stride - d.padding, w0 = q * d.stride - d.padding;
    const int64_t r_begin = h0 < 0 ? -h0 : 0, r_end = min(d.kernel, d.H - h0);
    const int64_t k_begin = w0 < 0 ? -w0 : 0, k_end = min(d.kernel, d.W - w0);
    int64_t best_index = (h0 + r_begin) * d.W + w0 + k_begin;
    float best = in[best_index];
    for (int64_t r = r_begin; r < r_end; ++r) {
      const int64_t row = (h0 + r) * d.W + w0;
      for (int64_t k = k_begin; k < k_end; ++k) {
        const float v = in[row + k];
        if (v > best || v != v) {
          best = v;
          best_index = row + k;
        }
      }
    }
    y[i] = best;
    argmax[i] = static_cast<int32_t>(best_index);
  }
}

__global__ void maxpool_backward_kernel(Dims d, const float* dy, const int32_t* argmax, float* dx) {
  const int64_t total = d.planes * d.H * d.W;
  KOLO_GRID_LOOP(i, total) {
    const int64_t w = i % d.W, h = (i / d.W) % d.H, plane = i / (d.H * d.W);
    const int32_t self = static_cast<int32_t>(h * d.W + w);
    // Outputs whose window covers (h, w): p·stride - padding <= h < p·stride - padding + kernel.
    const int64_t hp = h + d.padding, wp = w + d.padding;
    const int64_t p_begin = hp < d.kernel ? 0 : (hp - d.kernel) / d.stride + 1;
    const int64_t p_end = min(hp / d.stride + 1, d.P);
    const int64_t q_begin = wp < d.kernel ? 0 : (wp - d.kernel) / d.stride + 1;
    const int64_t q_end = min(wp / d.stride + 1, d.Q);
    const int64_t base = plane * d.P * d.Q;
    float sum = 0.0f;
    for (int64_t p = p_begin; p < p_end; ++p)
      for (int64_t q = q_begin; q < q_end; ++q)
        if (argmax[base + p * d.Q + q] == self) sum += dy[base + p * d.Q + q];
    dx[i] = sum;
  }
}

Dims dims(const PoolShape& s) {
  return {s.batch * s.channels, s.height, s.width, s.out_height(), s.out_width(), s.kernel, s.stride, s.padding};
}

}  // namespace

void maxpool_forward(cudaStream_t s, const PoolShape& shape, const float* x, float* y, int32_t* argmax) {
  const Dims d = dims(shape);
  const int64_t total = d.planes * d.P * d.Q;
  if (total == 0) return;
  maxpool_forward_kernel<<<blocks_for(total), kThreads, 0, s>>>(d, x, y, argmax);
  KOLO_CHECK_LAUNCH();
}

void maxpool_backward(cudaStream_t s, const PoolShape& shape, const float* dy, const int32_t* argmax, float* dx) {
  const Dims d = dims(shape);
  const int64_t total = d.planes * d.H * d.W;
  if (total == 0) return;
  maxpool_backward_kernel<<<blocks_for(total), kThreads, 0, s>>>(d, dy, argmax, dx);
  KOLO_CHECK_LAUNCH();
}

}  // namespace kolo::models::cuda::launch
