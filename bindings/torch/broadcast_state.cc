// broadcast_parameters and broadcast_optimizer_state: the start of a data-parallel run,
// where every rank takes root's model and optimizer.
#include <sstream>

#include "tensors.h"

namespace kolo::torch {

void broadcast_parameters(const NamedTensors& tensors, int root, const ProcessSet& set) {
  // The copies back into non-contiguous parameters are in-place writes to leaves that
  // require grad: autograd must not see them.
  ::torch::NoGradGuard no_grad;
  std::vector<Handle> handles;
  handles.reserve(tensors.size());
  for (const auto& [name, tensor] : tensors) {
    handles.push_back(broadcast_async_(tensor, root, "broadcast_parameters." + name, set));
  }
  detail::wait_all(handles);
}

void broadcast_parameters(const ::torch::nn::Module& module, int root, const ProcessSet& set) {
  NamedTensors tensors;
  for (const auto& item : module.named_parameters(/*recurse=*/true)) tensors.emplace_back(item.key(), item.value());
  for (const auto& item : module.named_buffers(/*recurse=*/true)) tensors.emplace_back(item.key(), item.value());
  broadcast_parameters(tensors, root, set);
}

void broadcast_optimizer_state(::torch::optim::Optimizer& optimizer, int root, const ProcessSet& set) {
  // The optimizer's own archive carries its options and state whatever its kind; the bytes
  // travel as one buffer and every other rank loads them.
  // LibTorch's load() reads the param groups' options (learning rate, momentum, ...) but
  // leaves the optimizer's as they were: they travel beside the archive's own, one per group.
  auto options_key = [](std::size_t group) { return "kolo.param_group_options." + std::to_string(group); };
  auto& groups = optimizer.param_groups();
  std::string bytes;
  if (kolo::rank() == root) {
    ::torch::serialize::OutputArchive archive;
    optimizer.save(archive);
    for (std::size_t g = 0; g < groups.size(); ++g) {
      ::torch::serialize::OutputArchive options(archive.compilation_unit());
      if (groups[g].has_options()) groups[g].options().serialize(options);
      archive.write(options_key(g), options);
    }
    std::ostringstream stream;
    archive.save_to(stream);
    bytes = stream.str();
  }
  bytes = broadcast_bytes("broadcast_optimizer_state", bytes, root, set);
  if (kolo::rank() == root) return;
  ::torch::serialize::InputArchive archive;
  archive.load_from(bytes.data(), bytes.size());
  optimizer.load(archive);
  for (std::size_t g = 0; g < groups.size(); ++g) {
    ::torch::serialize::InputArchive options;
    if (groups[g].has_options() && archive.try_read(options_key(g), options)) groups[g].options().serialize(options);
  }
}

}  // namespace kolo::torch
