// The loss scaler's state machine (GradScaler's _amp_update_scale_, in float32 as PyTorch's
// scale tensor) and the host side of unscaling; the per-element work is in
// models/amp/unscale.cc.
#include <cmath>
#include <limits>

#include "kolo/models.h"

namespace kolo::models {
namespace {
[[noreturn]] void invalid(const std::string& what, double value) {
  throw Error(StatusCode::InvalidArgument, "kolo: loss scaler: " + what + " " + std::to_string(value));
}
}  // namespace

LossScaler::LossScaler(const LossScalerOptions& options) : options_(options) {
  if (!(options.init_scale > 0) || !std::isfinite(static_cast<float>(options.init_scale)))
    invalid("init_scale must be positive and finite in float32, got", options.init_scale);
  if (!(options.growth_factor > 1)) invalid("growth_factor must be above 1, got", options.growth_factor);
  if (!(options.backoff_factor > 0 && options.backoff_factor < 1))
    invalid("backoff_factor must be in (0, 1), got", options.backoff_factor);
  if (options.growth_interval < 1) invalid("growth_interval must be at least 1, got", double(options.growth_interval));
  scale_ = static_cast<float>(options.init_scale);
}

void LossScaler::update(bool found_inf) {
  if (found_inf) {
    scale_ *= static_cast<float>(options_.backoff_factor);
    growth_tracker_ = 0;
    return;
  }
  if (++growth_tracker_ < options_.growth_interval) return;
  const float grown = scale_ * static_cast<float>(options_.growth_factor);
  if (std::isfinite(grown)) scale_ = grown;  // as PyTorch: never grow into inf
  growth_tracker_ = 0;
}

bool LossScaler::step(Optimizer& optimizer) {
  const bool found_inf = unscale(optimizer);
  if (!found_inf) optimizer.step();
  update(found_inf);
  return !found_inf;
}

void LossScaler::save(OptimizerState& state) const {
  state.scalars["loss_scale"] = scale_;
  state.scalars["loss_scale_growth_tracker"] = static_cast<double>(growth_tracker_);
}

void LossScaler::load(const OptimizerState& state) {
  auto scale = state.scalars.find("loss_scale");
  auto tracker = state.scalars.find("loss_scale_growth_tracker");
  if (scale == state.scalars.end() || tracker == state.scalars.end())
    throw Error(StatusCode::InvalidArgument, "kolo: loss scaler: the state has no loss_scale or loss_scale_growth_tracker");
  if (!(scale->second > 0) || !std::isfinite(static_cast<float>(scale->second)))
    invalid("saved loss_scale is not a positive float32:", scale->second);
  if (!(tracker->second >= 0) || tracker->second != std::floor(tracker->second))
    invalid("saved loss_scale_growth_tracker is not a count:", tracker->second);
  scale_ = static_cast<float>(scale->second);
  growth_tracker_ = static_cast<int64_t>(tracker->second);
}

}  // namespace kolo::models
