// The per-element side of loss scaling: scaling the loss gradient, and unscaling the
// parameter gradients while looking for inf/NaN (GradScaler's
// _amp_foreach_non_finite_check_and_unscale_: the check is on the scaled value). GPU
// gradients go to the backend, all tensors in one call.
#include <cmath>

#include "kolo/models.h"
#include "models/backend.h"
#include "models/cuda/gpu_runtime.h"

namespace kolo::models {

void LossScaler::scale_gradient(Tensor& grad) const {
  if (!grad.device().is_cpu()) {
    compute(grad.device()).scale(grad.numel(), grad.data(), scale_);
    return;
  }
  float* g = grad.data();
  const float s = scale_;
  for (int64_t i = 0; i < grad.numel(); ++i) g[i] *= s;
}

bool LossScaler::unscale(Optimizer& optimizer) const {
  // As PyTorch: the reciprocal in double, rounded to float.
  const float inv_scale = static_cast<float>(1.0 / double(scale_));
  const std::vector<Parameter*>& params = optimizer.parameters();
  if (!params.empty() && !params.front()->grad.device().is_cpu()) {
    const Device device = params.front()->grad.device();
    std::vector<float*> grads;
    std::vector<int64_t> counts;
    for (Parameter* p : params) {
      check_device(p->grad, device, "the gradient of " + p->name, "the first parameter's");
      grads.push_back(p->grad.data());
      counts.push_back(p->grad.numel());
    }
    return compute(device).unscale_and_check(grads, counts, inv_scale);
  }
  bool found_inf = false;
  for (Parameter* p : params) {
    check_device(p->grad, Device::cpu(), "the gradient of " + p->name, "the first parameter's");
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
