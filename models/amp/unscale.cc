// The per-element side of loss scaling: scaling the loss gradient, and unscaling the
// parameter gradients while looking for inf/NaN (GradScaler's
// _amp_foreach_non_finite_check_and_unscale_: the check is on the scaled value), all
// gradients in one Kernels call.
#include "kolo/models.h"
#include "models/kernels.h"
#include "models/cuda/gpu_runtime.h"

namespace kolo::models {

void LossScaler::scale_gradient(Tensor& grad) const { kernels(grad.device()).scale(grad.numel(), grad.data(), scale_); }

bool LossScaler::unscale(Optimizer& optimizer) const {
  const std::vector<Parameter*>& params = optimizer.parameters();
  if (params.empty()) return false;
  // As PyTorch: the reciprocal in double, rounded to float.
  const float inv_scale = static_cast<float>(1.0 / double(scale_));
  const Device device = params.front()->grad.device();
  std::vector<float*> grads;
  std::vector<int64_t> counts;
  for (Parameter* p : params) {
    check_device(p->grad, device, "the gradient of " + p->name, "the first parameter's");
    grads.push_back(p->grad.data());
    counts.push_back(p->grad.numel());
  }
  return kernels(device).unscale_and_check(grads, counts, inv_scale);
}

}  // namespace kolo::models
