// Mixed precision: dynamic loss scaling, as torch.cuda.amp.GradScaler does it. fp16
// gradients underflow to zero below 6e-8, so the loss (and with it every gradient) is
// multiplied by a large scale before backward, and the gradients divided by it before the
// update. A step whose gradients overflowed (inf or NaN) is skipped and the scale halved;
// after growth_interval good steps in a row the scale doubles. Part of kolo/models.h.
//
//   kolo::models::LossScaler scaler;
//   LossResult loss = softmax_cross_entropy(net.forward(x), labels);
//   scaler.scale_gradient(loss.grad);      // dL/dlogits × scale
//   net.backward(loss.grad);
//   bool stepped = scaler.step(sgd);       // unscale, check, step unless inf/NaN, update
#pragma once

#include <cstdint>
#include <vector>

namespace kolo::models {

class Optimizer;
class Tensor;
struct OptimizerState;

struct LossScalerOptions {
  double init_scale = 65536.0;  // 2^16, GradScaler's default
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
};

class LossScaler {
 public:
  // Throws kolo::Error for init_scale <= 0, growth_factor <= 1, backoff_factor outside (0, 1)
  // or growth_interval < 1.
  explicit LossScaler(const LossScalerOptions& options = {});

  // The factor the loss gradient is multiplied by (a float32, as GradScaler's scale tensor).
  float scale() const { return scale_; }
  // Consecutive steps without inf/NaN since the scale last changed.
  int64_t growth_tracker() const { return growth_tracker_; }

  // The state machine alone (GradScaler.update()): after a step whose unscaled gradients had
  // an inf or NaN (found_inf), the scale is multiplied by backoff_factor and the count of
  // good steps restarts; otherwise the count grows, and at growth_interval the scale is
  // multiplied by growth_factor (unless that overflows float32) and the count restarts.
  void update(bool found_inf);

  // grad *= scale, on the tensor's device.
  void scale_gradient(Tensor& grad) const;
  // Divides every gradient of the optimizer's parameters by the scale (multiplying by the
  // float32 reciprocal, as GradScaler.unscale_) and returns whether any is inf or NaN.
  bool unscale(Optimizer& optimizer) const;
  // GradScaler.step() + update(): unscale, take the optimizer's step unless a gradient was
  // inf or NaN, update the scale. Returns whether the step was taken.
  bool step(Optimizer& optimizer);

  // For checkpoints, next to an optimizer's state: scalars "loss_scale" and
  // "loss_scale_growth_tracker". load() throws kolo::Error if they are missing or invalid.
  void save(OptimizerState& state) const;
  void load(const OptimizerState& state);

 private:
  LossScalerOptions options_;
  float scale_;
  int64_t growth_tracker_ = 0;
};

}  // namespace kolo::models
