// What every optimizer shares: zero_grad, and saving/loading per-parameter buffers by name
// (models/optim/common.h).
#include <algorithm>
#include <cmath>
#include <set>

#include "models/optim/common.h"
#include "models/cuda/gpu_runtime.h"

namespace kolo::models {

Optimizer::Optimizer(std::vector<Parameter*> params) : params_(std::move(params)) {
  for (std::size_t i = 0; i < params_.size(); ++i)
    if (params_[i] == nullptr)
      throw Error(StatusCode::InvalidArgument, "kolo: optimizer parameter " + std::to_string(i) + " is null");
}

void Optimizer::set_lr(double lr) {
  if (!optim_detail::is_learning_rate(lr))
    throw Error(StatusCode::InvalidArgument, "kolo: " + name() + ": invalid learning rate " + std::to_string(lr));
  lr_ = lr;
}

void Optimizer::zero_grad() {
  for (Parameter* p : params_) p->grad.fill(0.0f);
}

void Optimizer::set_update_range(int64_t begin, int64_t end) {
  if (begin < 0 || end < begin)
    throw Error(StatusCode::InvalidArgument, "kolo: " + name() + ": update range [" + std::to_string(begin) + ", " +
                                                 std::to_string(end) + ") is not a range");
  update_begin_ = begin;
  update_end_ = end;
}

void Optimizer::for_each_update_block(const std::function<void(int64_t begin, int64_t end)>& update) {
  int64_t total = 0;
  for (const Parameter* p : params_) total += p->value.numel();
  const int64_t begin = std::min(update_begin_, total), end = std::min(update_end_, total);
  if (!before_update_) {
    update(begin, end);
    return;
  }
  // 16 Ki floats per thread: a block's gradients from a few ranks, its parameters and
  // state fit in L2, and a block is big enough for the CPU kernels to split it among the
  // threads (they split from 32 Ki elements).
  const int64_t block = int64_t{16 * 1024} * std::max(1, num_threads());
  for (int64_t b = begin; b < end; b += block) {
    const int64_t e = std::min(end, b + block);
    before_update_(b, e);
    update(b, e);
  }
}

namespace optim_detail {

void fail(const std::string& optimizer, const std::string& message) {
  throw Error(StatusCode::InvalidArgument, "kolo: " + optimizer + " state: " + message);
}

void check_grad(const Parameter& p, const std::string& optimizer) {
  if (p.grad.numel() != p.value.numel())
    throw Error(StatusCode::InvalidArgument, "kolo: " + optimizer + ": parameter " + p.name + " " +
                                                 shape_string(p.value.shape()) + " has a gradient of " +
                                                 std::to_string(p.grad.numel()) + " values");
}

void check_unique_names(const std::vector<Parameter*>& params, const std::string& optimizer) {
  std::set<std::string> seen;
  for (const Parameter* p : params)
    if (!seen.insert(p->name).second)
      fail(optimizer, "two parameters are named '" + p->name + "'; the state is saved by name, so names must be unique");
}

void save_buffers(OptimizerState& state, const std::string& kind, const std::vector<Parameter*>& params,
                  const std::vector<std::vector<float>>& buffers) {
  for (std::size_t i = 0; i < buffers.size(); ++i) state.tensors[kind + "/" + params[i]->name] = buffers[i];
}

void save_buffers(OptimizerState& state, const std::string& kind, const std::vector<Parameter*>& params,
                  const std::vector<Tensor>& buffers) {
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    const Tensor host = buffers[i].cpu();
    state.tensors[kind + "/" + params[i]->name] = std::vector<float>(host.data(), host.data() + host.numel());
  }
}

std::vector<Tensor> to_parameter_devices(const std::vector<std::vector<float>>& buffers,
                                         const std::vector<Parameter*>& params) {
  std::vector<Tensor> tensors;
  for (std::size_t i = 0; i < buffers.size(); ++i)
    tensors.push_back(Tensor::from(params[i]->value.shape(), buffers[i]).to(params[i]->value.device()));
  return tensors;
}

void follow_parameters(std::vector<Tensor>& buffers, const std::vector<Parameter*>& params) {
  for (std::size_t i = 0; i < buffers.size(); ++i)
    if (!(buffers[i].device() == params[i]->value.device())) buffers[i] = buffers[i].to(params[i]->value.device());
}

Device parameters_device(const std::vector<Parameter*>& params, const std::string& optimizer) {
  if (params.empty()) return Device::cpu();
  const Device device = params.front()->value.device();
  for (const Parameter* p : params)
    if (!(p->value.device() == device) || !(p->grad.device() == device))
      throw Error(StatusCode::InvalidArgument, "kolo: " + optimizer + ": parameter " + p->name + " (or its gradient) is on " +
                                                   device_name(p->grad.device() == device ? p->value.device() : p->grad.device()) +
                                                   ", the first parameter on " + device_name(device) +
                                                   "; an optimizer's parameters must be on one device");
  return device;
}

std::vector<Kernels::UpdateTensors> update_tensors(const std::vector<Parameter*>& params, std::vector<Tensor>& state1,
                                                   std::vector<Tensor>& state2, int64_t begin, int64_t end) {
  std::vector<Kernels::UpdateTensors> tensors;
  int64_t start = 0;  // of params[i] among the parameters taken end to end
  for (std::size_t i = 0; i < params.size() && start < end; ++i) {
    const int64_t n = params[i]->value.numel();
    const int64_t from = std::max(begin - start, int64_t{0}), to = std::min(end - start, n);
    start += n;
    if (from >= to) continue;
    const auto state_at = [&](std::vector<Tensor>& state) { return state.empty() ? nullptr : state[i].data() + from; };
    tensors.push_back({params[i]->value.data() + from, params[i]->grad.data() + from, state_at(state1), state_at(state2),
                       to - from});
  }
  return tensors;
}

std::vector<std::vector<float>> load_buffers(const OptimizerState& state, const std::string& kind,
                                             const std::vector<Parameter*>& params, const std::string& optimizer) {
  std::vector<std::vector<float>> buffers;
  std::string first_missing;
  for (const Parameter* p : params) {
    const std::string key = kind + "/" + p->name;
    auto it = state.tensors.find(key);
    if (it == state.tensors.end()) {
      if (first_missing.empty()) first_missing = key;
      continue;
    }
    if (static_cast<int64_t>(it->second.size()) != p->value.numel())
      fail(optimizer, "tensor '" + key + "' has " + std::to_string(it->second.size()) + " values but parameter " +
                          p->name + " " + shape_string(p->value.shape()) + " has " +
                          std::to_string(p->value.numel()));
    buffers.push_back(it->second);
  }
  // All or nothing: none means "saved before the first step", some means another net.
  if (!buffers.empty() && !first_missing.empty()) fail(optimizer, "tensor '" + first_missing + "' is missing");
  return buffers;
}

void check_known_tensors(const OptimizerState& state, const std::vector<std::string>& kinds,
                         const std::vector<Parameter*>& params, const std::string& optimizer) {
  std::set<std::string> names;
  for (const Parameter* p : params) names.insert(p->name);
  for (const auto& [key, values] : state.tensors) {
    const std::size_t slash = key.find('/');
    const std::string kind = key.substr(0, slash);
    bool known_kind = false;
    for (const std::string& k : kinds) known_kind = known_kind || k == kind;
    if (slash == std::string::npos || !known_kind)
      fail(optimizer, "unexpected tensor '" + key + "' (saved by another optimizer or other settings?)");
    if (!names.count(key.substr(slash + 1)))
      fail(optimizer, "tensor '" + key + "' belongs to no parameter of this optimizer");
  }
}

double scalar_or(const OptimizerState& state, const std::string& name, double fallback) {
  auto it = state.scalars.find(name);
  return it == state.scalars.end() ? fallback : it->second;
}

bool is_learning_rate(double lr) { return std::isfinite(lr) && lr >= 0; }

double lr_of(const OptimizerState& state, double fallback, const std::string& optimizer) {
  const double lr = scalar_or(state, "lr", fallback);
  if (!is_learning_rate(lr)) fail(optimizer, "scalar 'lr' is " + std::to_string(lr) + ", not a learning rate");
  return lr;
}

int64_t step_count(const OptimizerState& state, const std::string& optimizer) {
  const double step = scalar_or(state, "step", 0);
  if (!(step >= 0) || step != std::floor(step) || step > 9.0e15)
    fail(optimizer, "scalar 'step' is " + std::to_string(step) + ", not a step count");
  return static_cast<int64_t>(step);
}

}  // namespace optim_detail
}  // namespace kolo::models
