// Zero padding: plane rows copied into (and back out of) a zeroed frame.
#include <cstring>

#include "cpu_kernels.h"

namespace kolo::models::cpu {

void CpuKernels::zero_pad_forward(int64_t planes, int64_t h, int64_t w, int64_t pad, const float* x, float* y) {
  const int64_t H = h + 2 * pad, W = w + 2 * pad;
  std::memset(y, 0, sizeof(float) * static_cast<std::size_t>(planes * H * W));
  for (int64_t plane = 0; plane < planes; ++plane)
    for (int64_t r = 0; r < h; ++r)
      std::memcpy(y + (plane * H + r + pad) * W + pad, x + (plane * h + r) * w, sizeof(float) * w);
}

void CpuKernels::zero_pad_backward(int64_t planes, int64_t h, int64_t w, int64_t pad, const float* dy, float* dx) {
  const int64_t H = h + 2 * pad, W = w + 2 * pad;
  for (int64_t plane = 0; plane < planes; ++plane)
    for (int64_t r = 0; r < h; ++r)
      std::memcpy(dx + (plane * h + r) * w, dy + (plane * H + r + pad) * W + pad, sizeof(float) * w);
}

}  // namespace kolo::models::cpu
