// The loss scaler's unscale-and-check (GradScaler's
// _amp_foreach_non_finite_check_and_unscale_): the check is on the scaled value.
#include <cmath>

#include "cpu_kernels.h"

namespace kolo::models::cpu {

bool CpuKernels::unscale_and_check(std::span<float* const> tensors, std::span<const int64_t> counts,
                                   float inv_scale) {
  bool found_inf = false;
  for (std::size_t t = 0; t < tensors.size(); ++t) {
    float* g = tensors[t];
    const int64_t n = counts[t];
    for (int64_t i = 0; i < n; ++i) {
      found_inf = found_inf || !std::isfinite(g[i]);
      g[i] *= inv_scale;
    }
  }
  return found_inf;
}

}  // namespace kolo::models::cpu
