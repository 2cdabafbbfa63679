// The per-element side of loss scaling: scaling the loss gradient, and unscaling the
// parameter gradients while looking for inf/NaN (GradScaler's
// _amp_foreach_non_finite_check_and_unscale_: the check is on the scaled value).
#include <cmath>

#include "kolo/models.h"

namespace kolo::models {

void LossScaler::scale_gradient(Tensor& grad) const {
  float* g = grad.data();
  const float s = scale_;
  for (int64_t i = 0; i < grad.numel(); ++i) g[i] *= s;
}

bool LossScaler::unscale(Optimizer& optimizer) const {
  // As PyTorch: the reciprocal in double, rounded to float.
  const float inv_scale = static_cast<float>(1.0 / double(scale_));
  bool found_inf = false;
  for (Parameter* p : optimizer.parameters()) {
    float* g = p->grad.data();
    const int64_t n = p->grad.numel();
    for (int64_t i = 0; i < n; ++i) {
      found_inf = found_inf || !std::isfinite(g[i]);
      g[i] *= inv_scale;
    }
  }
  return found_inf;
}

}  // namespace kolo::models
