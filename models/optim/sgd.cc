// SGD with momentum, dampening, Nesterov and weight decay: torch.optim.SGD's update (1.13),
// element by element in float32 with the hyper-parameters rounded to float as PyTorch does.
// Parameters on a GPU are updated all at once by the backend (Backend::sgd_step), with the
// same rules.
#include "models/backend.h"
#include "models/cpu/thread_pool.h"
#include "models/optim/common.h"

namespace kolo::models {
using namespace optim_detail;

SGD::SGD(std::vector<Parameter*> params, const SgdOptions& options)
    : Optimizer(std::move(params)), options_(options) {
  const auto invalid = [](const std::string& what) {
    throw Error(StatusCode::InvalidArgument, "kolo: sgd: " + what);
  };
  if (!(options.lr >= 0)) invalid("invalid learning rate " + std::to_string(options.lr));
  if (!(options.momentum >= 0)) invalid("invalid momentum " + std::to_string(options.momentum));
  if (!(options.weight_decay >= 0)) invalid("invalid weight_decay " + std::to_string(options.weight_decay));
  // As torch.optim.SGD: Nesterov's look-ahead is defined for undampened momentum only.
  if (options.nesterov && (options.momentum <= 0 || options.dampening != 0))
    invalid("Nesterov momentum requires a momentum and zero dampening");
  lr_ = options.lr;
}

void SGD::step() {
  const bool use_momentum = options_.momentum != 0;
  const bool use_decay = options_.weight_decay != 0;
  const float decay = static_cast<float>(options_.weight_decay);
  const float momentum = static_cast<float>(options_.momentum);
  const float keep = static_cast<float>(1 - options_.dampening);  // PyTorch's alpha = 1 - dampening
  const float neg_lr = static_cast<float>(-lr_);
  // PyTorch creates the buffer on the first step as a copy of the update (no dampening).
  const bool first = use_momentum && momentum_.empty();
  for (const Parameter* p : params_) check_grad(*p, name());
  const Device device = parameters_device(params_, name());
  if (first)
    for (const Parameter* p : params_) momentum_.push_back(Tensor::uninitialized(p->value.shape(), device));
  follow_parameters(momentum_, params_);

  if (!device.is_cpu()) {
    std::vector<Backend::UpdateTensors> tensors;
    for (std::size_t i = 0; i < params_.size(); ++i)
      tensors.push_back({params_[i]->value.data(), params_[i]->grad.data(),
                         use_momentum ? momentum_[i].data() : nullptr, nullptr, params_[i]->value.numel()});
    compute(device).sgd_step(tensors, {.neg_lr = neg_lr, .momentum = momentum, .weight_decay = decay,
                                       .keep = keep, .nesterov = options_.nesterov, .first = first});
    return;
  }
  for (std::size_t i = 0; i < params_.size(); ++i) {
    Parameter& param = *params_[i];
    float* p = param.value.data();
    const float* g = param.grad.data();
    const int64_t n = param.value.numel();
    float* buf = use_momentum ? momentum_[i].data() : nullptr;
    // Memory-bound, and on one thread it was 8 % of a 2-thread ResNet-18 step.
    cpu::parallel_for_elements(n, [&](int64_t begin, int64_t end) {
      for (int64_t j = begin; j < end; ++j) {
        float d = g[j];
        if (use_decay) d = d + decay * p[j];
        if (use_momentum) {
          buf[j] = first ? d : buf[j] * momentum + keep * d;
          d = options_.nesterov ? d + momentum * buf[j] : buf[j];
        }
        p[j] = p[j] + neg_lr * d;
      }
    });
  }
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
  lr_ = scalar_or(state, "lr", lr_);
  momentum_ = std::move(momentum);
}

}  // namespace kolo::models
