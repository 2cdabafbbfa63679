// Max pooling (planes split across threads) and global average pooling.
#include <algorithm>
#include <limits>
#include <vector>

#include "cpu_kernels.h"
#include "thread_pool.h"

namespace kolo::models::cpu {
namespace {
// The common 2×2, stride-2 window without padding, as a straight-line comparison.
void maxpool_2x2(const PoolShape& s, const float* x, float* y, int32_t* argmax) {
  const int64_t P = s.out_height(), Q = s.out_width(), W = s.width;
  parallel_for(s.batch * s.channels, [&](int64_t begin, int64_t end, int) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const float* in = x + plane * s.height * W;
      float* out = y + plane * P * Q;
      int32_t* arg = argmax + plane * P * Q;
      for (int64_t p = 0; p < P; ++p) {
        const float* top = in + 2 * p * W;
        const float* bottom = top + W;
        for (int64_t q = 0; q < Q; ++q) {
          // Scan order as PyTorch: strictly greater wins, so ties keep the first; NaN wins.
          float best = top[2 * q];
          int64_t at = 2 * p * W + 2 * q;
          const float candidates[3] = {top[2 * q + 1], bottom[2 * q], bottom[2 * q + 1]};
          const int64_t offsets[3] = {1, W, W + 1};
          for (int k = 0; k < 3; ++k) {
            if (candidates[k] > best || candidates[k] != candidates[k]) {
              best = candidates[k];
              at = 2 * p * W + 2 * q + offsets[k];
            }
          }
          out[p * Q + q] = best;
          arg[p * Q + q] = static_cast<int32_t>(at);
        }
      }
    }
  });
}

// Any window: one output row at a time, tap by tap, so that each tap's comparison runs
// across the row's outputs as a vectorisable select instead of a branchy scan per output.
// Per output, taps are still visited in scan order and the same rule picks the winner:
// strictly greater wins (ties keep the first maximum, as in PyTorch), NaN wins.
void maxpool_rows(const PoolShape& s, const float* x, float* y, int32_t* argmax) {
  const int64_t P = s.out_height(), Q = s.out_width(), W = s.width;
  // For each tap column k, the outputs [lo, hi) whose column q·stride − padding + k is
  // inside the row (worked out once: divisions in the inner loops cost more than the rest).
  std::vector<std::pair<int64_t, int64_t>> inside(static_cast<std::size_t>(s.kernel));
  for (int64_t k = 0; k < s.kernel; ++k) {
    const int64_t shift = k - s.padding;
    inside[static_cast<std::size_t>(k)] = {std::max<int64_t>(0, (-shift + s.stride - 1) / s.stride),
                                           std::min<int64_t>(Q, shift < W ? (W - shift + s.stride - 1) / s.stride : 0)};
  }
  parallel_for(s.batch * s.channels, [&](int64_t begin, int64_t end, int) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const float* in = x + plane * s.height * W;
      for (int64_t p = 0; p < P; ++p) {
        float* best = y + (plane * P + p) * Q;
        int32_t* at = argmax + (plane * P + p) * Q;
        const int64_t h0 = p * s.stride - s.padding;
        const int64_t r_begin = std::max<int64_t>(0, -h0), r_end = std::min(s.kernel, s.height - h0);
        // Start from each window's first input, so that a window of -inf picks it.
        for (int64_t q = 0; q < Q; ++q) {
          best[q] = -std::numeric_limits<float>::infinity();
          at[q] = static_cast<int32_t>((h0 + r_begin) * W + std::max<int64_t>(0, q * s.stride - s.padding));
        }
        for (int64_t r = r_begin; r < r_end; ++r) {
          const int64_t row = (h0 + r) * W;
          for (int64_t k = 0; k < s.kernel; ++k) {
            const int64_t shift = k - s.padding;
            const auto [lo, hi] = inside[static_cast<std::size_t>(k)];
            for (int64_t q = lo; q < hi; ++q) {
              const int64_t i = row + q * s.stride + shift;
              const float v = in[i];
              const bool wins = v > best[q] || v != v;
              best[q] = wins ? v : best[q];
              at[q] = wins ? static_cast<int32_t>(i) : at[q];
            }
          }
        }
      }
    }
  });
}
}  // namespace

void CpuKernels::maxpool_forward(const PoolShape& s, const float* x, float* y, int32_t* argmax) {
  if (s.kernel == 2 && s.stride == 2 && s.padding == 0) return maxpool_2x2(s, x, y, argmax);
  maxpool_rows(s, x, y, argmax);
}

void CpuKernels::maxpool_backward(const PoolShape& s, const float* dy, const int32_t* argmax,
                                  float* dx) {
  const int64_t PQ = s.out_height() * s.out_width(), HW = s.height * s.width;
  parallel_for(s.batch * s.channels, [&](int64_t begin, int64_t end, int) {
    for (int64_t plane = begin; plane < end; ++plane) {
      float* d = dx + plane * HW;
      std::fill(d, d + HW, 0.0f);
      for (int64_t i = 0; i < PQ; ++i) d[argmax[plane * PQ + i]] += dy[plane * PQ + i];
    }
  });
}

void CpuKernels::global_avg_pool_forward(int64_t planes, int64_t hw, const float* x, float* y) {
  for (int64_t p = 0; p < planes; ++p) {
    const float* in = x + p * hw;
    double sum = 0;
    for (int64_t j = 0; j < hw; ++j) sum += in[j];
    y[p] = static_cast<float>(sum / double(hw));
  }
}

void CpuKernels::global_avg_pool_backward(int64_t planes, int64_t hw, const float* dy, float* dx) {
  for (int64_t p = 0; p < planes; ++p) {
    const float g = dy[p] / static_cast<float>(hw);
    float* d = dx + p * hw;
    for (int64_t j = 0; j < hw; ++j) d[j] = g;
  }
}

}  // namespace kolo::models::cpu
