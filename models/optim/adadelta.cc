// Adadelta: torch.optim.Adadelta's update (1.13), element by element in float32
// (Kernels::adadelta_step, all parameters in one call).
#include "models/kernels.h"
#include "models/optim/common.h"

namespace kolo::models {
using namespace optim_detail;

Adadelta::Adadelta(std::vector<Parameter*> params, const AdadeltaOptions& options)
    : Optimizer(std::move(params)), options_(options) {
  const auto invalid = [](const std::string& what, double value) {
    throw Error(StatusCode::InvalidArgument, "kolo: adadelta: invalid " + what + " " + std::to_string(value));
  };
  if (!is_learning_rate(options.lr)) invalid("learning rate", options.lr);
  if (!(options.rho >= 0 && options.rho <= 1)) invalid("rho", options.rho);
  if (!(options.eps >= 0)) invalid("epsilon", options.eps);
  if (!(options.weight_decay >= 0)) invalid("weight_decay", options.weight_decay);
  lr_ = options.lr;
}

void Adadelta::step() {
  for (const Parameter* p : params_) check_grad(*p, name());
  const Device device = parameters_device(params_, name());
  if (square_avg_.empty()) {  // PyTorch's lazy state: zeros at the first step
    for (const Parameter* p : params_) {
      square_avg_.push_back(Tensor::zeros(p->value.shape(), device));
      acc_delta_.push_back(Tensor::zeros(p->value.shape(), device));
    }
  }
  follow_parameters(square_avg_, params_);
  follow_parameters(acc_delta_, params_);
  const Kernels::AdadeltaStep hyper{.neg_lr = static_cast<float>(-lr_),
                                    .rho = static_cast<float>(options_.rho),
                                    .one_minus_rho = static_cast<float>(1 - options_.rho),
                                    .eps = static_cast<float>(options_.eps),
                                    .weight_decay = static_cast<float>(options_.weight_decay)};
  for_each_update_block([&](int64_t begin, int64_t end) {
    kernels(device).adadelta_step(update_tensors(params_, square_avg_, acc_delta_, begin, end), hyper);
  });
}

OptimizerState Adadelta::state() const {
  check_unique_names(params_, name());
  OptimizerState state;
  state.scalars["lr"] = lr_;
  save_buffers(state, "square_avg", params_, square_avg_);
  save_buffers(state, "acc_delta", params_, acc_delta_);
  return state;
}

void Adadelta::load_state(const OptimizerState& state) {
  check_unique_names(params_, name());
  check_known_tensors(state, {"square_avg", "acc_delta"}, params_, name());
  const std::vector<std::vector<float>> square_avg = load_buffers(state, "square_avg", params_, name());
  const std::vector<std::vector<float>> acc_delta = load_buffers(state, "acc_delta", params_, name());
  if (square_avg.empty() != acc_delta.empty())
    fail(name(), "the state has " + std::to_string(square_avg.size()) + " square_avg but " +
                     std::to_string(acc_delta.size()) + " acc_delta tensors");
  lr_ = lr_of(state, lr_, name());
  square_avg_ = to_parameter_devices(square_avg, params_);
  acc_delta_ = to_parameter_devices(acc_delta, params_);
}

}  // namespace kolo::models
