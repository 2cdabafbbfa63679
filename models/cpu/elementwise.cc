// ReLU, residual adds, scaling and products: memory-bound loops. ReLU and the residual add
// (every layer, every step) are split across threads by range; scaling (the loss gradient,
// once a step) and products (dropout's mask) run on the calling thread.
#include "cpu_kernels.h"
#include "thread_pool.h"

namespace kolo::models::cpu {

void CpuKernels::relu_forward(int64_t count, float* x) {
  parallel_for_elements(count, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) x[i] = x[i] > 0.0f ? x[i] : 0.0f;
  });
}

void CpuKernels::relu_backward(int64_t count, const float* y, const float* dy, float* dx) {
  parallel_for_elements(count, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
  });
}

void CpuKernels::add_into(int64_t count, float* a, const float* b) {
  parallel_for_elements(count, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) a[i] += b[i];
  });
}

void CpuKernels::scale(int64_t count, float* x, float factor) {
  for (int64_t i = 0; i < count; ++i) x[i] *= factor;
}

void CpuKernels::multiply(int64_t count, const float* a, const float* b, float* out) {
  for (int64_t i = 0; i < count; ++i) out[i] = a[i] * b[i];
}

}  // namespace kolo::models::cpu
