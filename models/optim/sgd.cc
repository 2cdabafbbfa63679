// SGD with momentum, dampening, Nesterov and weight decay: torch.optim.SGD's update (1.13),
// element by element in float32 with the hyper-parameters rounded to float as PyTorch does
// (Kernels::sgd_step, all parameters in one call).
#include "models/kernels.h"
#include "models/optim/common.h"

namespace kolo::models {
using namespace optim_detail;

SGD::SGD(std::vector<Parameter*> params, const SgdOptions& options)
    : Optimizer(std::move(params)), options_(options) {
  const auto invalid = [](const std::string& what) {
    throw Error(StatusCode::InvalidArgument, "kolo: sgd: " + what);
  };
  if (!is_learning_rate(options.lr)) invalid("invalid learning rate " + std::to_string(options.lr));
  if (!(options.momentum >= 0)) invalid("invalid momentum " + std::to_string(options.momentum));
  if (!(options.weight_decay >= 0)) invalid("invalid weight_decay " + std::to_string(options.weight_decay));
  // As torch.optim.SGD: Nesterov's look-ahead is defined for undampened momentum only.
  if (options.nesterov && (options.momentum <= 0 || options.dampening != 0))
    invalid("Nesterov momentum requires a momentum and zero dampening");
  lr_ = options.lr;
}

void SGD::step() {
  const bool use_momentum = options_.momentum != 0;
  // PyTorch creates the buffer on the first step as a copy of the update (no dampening).
  const bool first = use_momentum && momentum_.empty();
  for (const Parameter* p : params_) check_grad(*p, name());
  const Device device = parameters_device(params_, name());
  if (first)
    for (const Parameter* p : params_) momentum_.push_back(Tensor::uninitialized(p->value.shape(), device));
  follow_parameters(momentum_, params_);

  std::vector<Tensor> no_second_buffer;
  const Kernels::SgdStep hyper{.neg_lr = static_cast<float>(-lr_),
                               .momentum = static_cast<float>(options_.momentum),
                               .weight_decay = static_cast<float>(options_.weight_decay),
                               .keep = static_cast<float>(1 - options_.dampening),  // PyTorch's alpha
                               .nesterov = options_.nesterov,
                               .first = first};
  for_each_update_block([&](int64_t begin, int64_t end) {
    kernels(device).sgd_step(update_tensors(params_, momentum_, no_second_buffer, begin, end), hyper);
  });
}

std::vector<std::vector<Tensor>*> SGD::state_buffers() {
  if (options_.momentum == 0) return {};
  return {&momentum_};
}

OptimizerState SGD::state() const {
  check_unique_names(params_, name());
  OptimizerState state;
  state.scalars["lr"] = lr_;
  save_buffers(state, "momentum", params_, momentum_);
  return state;
}

void SGD::load_state(const OptimizerState& state) {
  check_unique_names(params_, name());
  check_known_tensors(state, options_.momentum != 0 ? std::vector<std::string>{"momentum"} : std::vector<std::string>{},
                      params_, name());
  std::vector<Tensor> momentum = to_parameter_devices(load_buffers(state, "momentum", params_, name()), params_);
  lr_ = lr_of(state, lr_, name());
  momentum_ = std::move(momentum);
}

}  // namespace kolo::models
