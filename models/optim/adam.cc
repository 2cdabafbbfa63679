// Adam (not AdamW: weight decay is added to the gradient): torch.optim.Adam's update (1.13,
// amsgrad off), element by element in float32; bias corrections in double, as PyTorch
// computes them in Python floats.
#include <cmath>

#include "models/backend.h"
#include "models/cpu/thread_pool.h"
#include "models/optim/common.h"

namespace kolo::models {
using namespace optim_detail;

Adam::Adam(std::vector<Parameter*> params, const AdamOptions& options)
    : Optimizer(std::move(params)), options_(options) {
  const auto invalid = [](const std::string& what, double value) {
    throw Error(StatusCode::InvalidArgument, "kolo: adam: invalid " + what + " " + std::to_string(value));
  };
  if (!(options.lr >= 0)) invalid("learning rate", options.lr);
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
  const float neg_step_size = static_cast<float>(-(lr_ / bias_correction1));
  const float bias_correction2_sqrt = static_cast<float>(std::sqrt(bias_correction2));
  const float beta1 = static_cast<float>(options_.beta1), one_minus_beta1 = static_cast<float>(1 - options_.beta1);
  const float beta2 = static_cast<float>(options_.beta2), one_minus_beta2 = static_cast<float>(1 - options_.beta2);
  const float eps = static_cast<float>(options_.eps);
  const float decay = static_cast<float>(options_.weight_decay);
  const bool use_decay = options_.weight_decay != 0;

  if (!device.is_cpu()) {
    std::vector<Backend::UpdateTensors> tensors;
    for (std::size_t i = 0; i < params_.size(); ++i)
      tensors.push_back({params_[i]->value.data(), params_[i]->grad.data(), m_[i].data(), v_[i].data(),
                         params_[i]->value.numel()});
    compute(device).adam_step(tensors, {.neg_step_size = neg_step_size, .bias_correction2_sqrt = bias_correction2_sqrt,
                                        .beta1 = beta1, .one_minus_beta1 = one_minus_beta1, .beta2 = beta2,
                                        .one_minus_beta2 = one_minus_beta2, .eps = eps, .weight_decay = decay});
    return;
  }
  for (std::size_t i = 0; i < params_.size(); ++i) {
    Parameter& param = *params_[i];
    float* p = param.value.data();
    const float* g = param.grad.data();
    float* m = m_[i].data();
    float* v = v_[i].data();
    const int64_t n = param.value.numel();
    // Memory-bound, and on one thread it was 8 % of a 2-thread ResNet-18 step.
    cpu::parallel_for_elements(n, [&](int64_t begin, int64_t end) {
      for (int64_t j = begin; j < end; ++j) {
        float grad = g[j];
        if (use_decay) grad = grad + decay * p[j];
        // The groupings follow PyTorch's kernels: mul_ then add_; addcmul is
        // self + (value * t1) * t2; addcdiv is self + (value * t1) / t2.
        m[j] = m[j] * beta1 + one_minus_beta1 * grad;
        v[j] = v[j] * beta2 + one_minus_beta2 * grad * grad;
        const float denom = std::sqrt(v[j]) / bias_correction2_sqrt + eps;
        p[j] = p[j] + neg_step_size * m[j] / denom;
      }
    });
  }
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
  lr_ = scalar_or(state, "lr", lr_);
  steps_ = steps;
  m_ = to_parameter_devices(m, params_);
  v_ = to_parameter_devices(v, params_);
}

}  // namespace kolo::models
