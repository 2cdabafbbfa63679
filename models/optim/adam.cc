// Adam (not AdamW: weight decay is added to the gradient): torch.optim.Adam's update (1.13,
// amsgrad off), element by element in float32 (Kernels::adam_step, all parameters in one
// call); bias corrections in double, as PyTorch computes them in Python floats.
#include <cmath>

#include "models/kernels.h"
#include "models/optim/common.h"

namespace kolo::models {
using namespace optim_detail;

Adam::Adam(std::vector<Parameter*> params, const AdamOptions& options)
    : Optimizer(std::move(params)), options_(options) {
  const auto invalid = [](const std::string& what, double value) {
    throw Error(StatusCode::InvalidArgument, "kolo: adam: invalid " + what + " " + std::to_string(value));
  };
  if (!is_learning_rate(options.lr)) invalid("learning rate", options.lr);
  if (!(options.eps >= 0)) invalid("epsilon", options.eps);
  if (!(options.beta1 >= 0 && options.beta1 < 1)) invalid("beta1", options.beta1);
  if (!(options.beta2 >= 0 && options.beta2 < 1)) invalid("beta2", options.beta2);
  if (!(options.weight_decay >= 0)) invalid("weight_decay", options.weight_decay);
  lr_ = options.lr;
}

void Adam::step() {
  for (const Parameter* p : params_) check_grad(*p, name());
  const Device device = parameters_device(params_, name());
  if (m_.empty()) {  // PyTorch's lazy state: zeros at the first step
    for (const Parameter* p : params_) {
      m_.push_back(Tensor::zeros(p->value.shape(), device));
      v_.push_back(Tensor::zeros(p->value.shape(), device));
    }
  }
  follow_parameters(m_, params_);
  follow_parameters(v_, params_);
  ++steps_;
  const double t = static_cast<double>(steps_);
  const double bias_correction1 = 1 - std::pow(options_.beta1, t);
  const double bias_correction2 = 1 - std::pow(options_.beta2, t);
  const Kernels::AdamStep hyper{.neg_step_size = static_cast<float>(-(lr_ / bias_correction1)),
                                .bias_correction2_sqrt = static_cast<float>(std::sqrt(bias_correction2)),
                                .beta1 = static_cast<float>(options_.beta1),
                                .one_minus_beta1 = static_cast<float>(1 - options_.beta1),
                                .beta2 = static_cast<float>(options_.beta2),
                                .one_minus_beta2 = static_cast<float>(1 - options_.beta2),
                                .eps = static_cast<float>(options_.eps),
                                .weight_decay = static_cast<float>(options_.weight_decay)};
  for_each_update_block([&](int64_t begin, int64_t end) {
    kernels(device).adam_step(update_tensors(params_, m_, v_, begin, end), hyper);
  });
}

OptimizerState Adam::state() const {
  check_unique_names(params_, name());
  OptimizerState state;
  state.scalars["lr"] = lr_;
  state.scalars["step"] = static_cast<double>(steps_);
  save_buffers(state, "exp_avg", params_, m_);
  save_buffers(state, "exp_avg_sq", params_, v_);
  return state;
}

void Adam::load_state(const OptimizerState& state) {
  check_unique_names(params_, name());
  check_known_tensors(state, {"exp_avg", "exp_avg_sq"}, params_, name());
  const std::vector<std::vector<float>> m = load_buffers(state, "exp_avg", params_, name());
  const std::vector<std::vector<float>> v = load_buffers(state, "exp_avg_sq", params_, name());
  const int64_t steps = step_count(state, name());
  // Moments exist exactly when a step was taken (an empty net has neither).
  if (m.empty() != v.empty() || (!params_.empty() && (steps > 0) == m.empty()))
    fail(name(), "'step' is " + std::to_string(steps) + " but the state has " +
                     std::to_string(m.size()) + " exp_avg and " + std::to_string(v.size()) + " exp_avg_sq tensors");
  lr_ = lr_of(state, lr_, name());
  steps_ = steps;
  m_ = to_parameter_devices(m, params_);
  v_ = to_parameter_devices(v, params_);
}

}  // namespace kolo::models
