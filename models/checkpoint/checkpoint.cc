// make_checkpoint and restore: between a Module (parameters and buffers, by name) plus an
// Optimizer and the Checkpoint that save_checkpoint writes.
#include <set>

#include "kolo/models.h"

namespace kolo::models {
namespace {

[[noreturn]] void fail(const std::string& what) {
  throw Error(StatusCode::InvalidArgument, "kolo: " + what);
}

// Parameters, then buffers, in the module's order.
std::vector<std::pair<std::string, Tensor*>> named_tensors(Module& module) {
  std::vector<std::pair<std::string, Tensor*>> tensors;
  for (Parameter* p : module.parameters()) tensors.emplace_back(p->name, &p->value);
  for (const auto& buffer : module.buffers()) tensors.push_back(buffer);
  return tensors;
}

}  // namespace

Checkpoint make_checkpoint(Module& module, const Optimizer* optimizer, int64_t epoch) {
  Checkpoint c;
  for (const auto& [name, tensor] : named_tensors(module)) {
    if (c.tensors.count(name)) fail("make_checkpoint: two tensors of the module are named '" + name + "'");
    c.shapes[name] = tensor->shape();
    const Tensor host = tensor->cpu();  // GPU tensors are copied down
    c.tensors[name] = std::vector<float>(host.data(), host.data() + host.numel());
  }
  if (optimizer) {
    c.optimizer = optimizer->state();
    c.optimizer_name = optimizer->name();
  }
  c.epoch = epoch;
  return c;
}

void restore(const Checkpoint& checkpoint, Module& module, Optimizer* optimizer) {
  // Everything is checked before anything is copied, so a checkpoint that does not fit
  // leaves the module and the optimizer as they were.
  const std::vector<std::pair<std::string, Tensor*>> targets = named_tensors(module);
  std::set<std::string> expected;
  for (const auto& [name, tensor] : targets) {
    expected.insert(name);
    auto values = checkpoint.tensors.find(name);
    if (values == checkpoint.tensors.end())
      fail("restore: the checkpoint has no tensor '" + name + "' " + shape_string(tensor->shape()));
    auto shape = checkpoint.shapes.find(name);
    if (shape == checkpoint.shapes.end())
      fail("restore: the checkpoint has no shape for tensor '" + name + "'");
    if (shape->second != tensor->shape())
      fail("restore: tensor '" + name + "' is " + shape_string(shape->second) + " in the checkpoint but " +
           shape_string(tensor->shape()) + " in the module");
    if (static_cast<int64_t>(values->second.size()) != tensor->numel())
      fail("restore: tensor '" + name + "' " + shape_string(shape->second) + " has " +
           std::to_string(values->second.size()) + " values in the checkpoint");
  }
  for (const auto& [name, values] : checkpoint.tensors)
    if (!expected.count(name)) fail("restore: the checkpoint's tensor '" + name + "' is not in the module");

  if (optimizer) {
    if (checkpoint.optimizer_name.empty()) fail("restore: the checkpoint holds no optimizer state");
    if (checkpoint.optimizer_name != optimizer->name())
      fail("restore: the checkpoint holds " + checkpoint.optimizer_name + " state, the optimizer is " +
           optimizer->name());
    optimizer->load_state(checkpoint.optimizer);  // checks before it changes anything
  }
  for (const auto& [name, tensor] : targets) {
    const std::vector<float>& values = checkpoint.tensors.at(name);
    if (tensor->device().is_cpu()) std::copy(values.begin(), values.end(), tensor->data());
    else tensor->copy_from(Tensor::from(tensor->shape(), values));
  }
}

}  // namespace kolo::models
