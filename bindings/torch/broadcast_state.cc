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
  for (const Handle& h : handles) h.wait();
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
  std::string bytes;
  if (kolo::rank() == root) {
    ::torch::serialize::OutputArchive archive;
    optimizer.save(archive);
    std::ostringstream stream;
    archive.save_to(stream);
    bytes = stream.str();
  }
  bytes = broadcast_bytes("broadcast_optimizer_state", bytes, root, set);
  if (kolo::rank() == root) return;
  ::torch::serialize::InputArchive archive;
  archive.load_from(bytes.data(), bytes.size());
  optimizer.load(archive);
}

}  // namespace kolo::torch
