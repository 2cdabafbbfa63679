// kolo for LibTorch: kolo's collectives on torch::Tensor, and a DistributedOptimizer that
// makes an ordinary LibTorch training loop data-parallel (the C++ side of horovod.torch).
//
//   kolo::init();
//   auto model = std::make_shared<Net>();
//   torch::optim::SGD sgd(model->parameters(), lr * kolo::size());
//   kolo::torch::broadcast_parameters(*model, 0);
//   kolo::torch::broadcast_optimizer_state(sgd, 0);
//   kolo::torch::DistributedOptimizer opt(sgd, model->named_parameters());
//   ... opt.zero_grad(); loss.backward(); opt.step(); ...
//
// Everything here sits on kolo's public API (kolo/kolo.h): a tensor is handed to kolo as a
// TensorView over its storage, and a Handle keeps the tensors it reads and writes alive
// until the operation is done. Names, process sets and errors are kolo's: an empty name
// gets one of kolo's, and a failure throws kolo::Error. See docs/torch.md.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kolo/kolo.h"

namespace kolo::torch {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

// kolo's dtype of a torch dtype; InvalidArgument naming it for those kolo lacks (bool,
// int16, complex, ...).
DType to_kolo_dtype(at::ScalarType type);
at::ScalarType to_torch_dtype(DType dtype);

// One collective in flight on torch tensors (horovod.torch's handle). Copyable: copies
// share the operation.
class Handle {
 public:
  struct State;
  Handle() = default;
  explicit Handle(std::shared_ptr<State> state) : state_(std::move(state)) {}

  bool ready() const;  // never blocks
  // Waits, throws kolo::Error if the operation failed, and returns its result: the tensor
  // given for in-place forms, a new tensor otherwise. Later calls return the same tensor.
  at::Tensor wait() const;
  // alltoall only, after wait(): how many first-dimension rows came from each rank.
  std::vector<int64_t> received_splits() const;

 private:
  std::shared_ptr<State> state_;
};

// Each operation takes kolo's options (kolo/kolo.h) and checks its tensors at once: a dtype
// kolo lacks, a tensor on another device than the process's others, a bad root or a name
// already in flight throw kolo::Error (InvalidArgument) from the call itself. A
// non-contiguous tensor is copied; in-place forms copy the result back into it.

// allreduce: `_` forms write the result into the tensor given; the others into a new one.
Handle allreduce_async(const at::Tensor& tensor, const std::string& name = "", const AllreduceOptions& options = {});
Handle allreduce_async_(const at::Tensor& tensor, const std::string& name = "", const AllreduceOptions& options = {});
at::Tensor allreduce(const at::Tensor& tensor, const std::string& name = "", const AllreduceOptions& options = {});
// Negotiated and run as one unit; tensor i is named "<name>.<i>" (kolo's names if empty).
std::vector<Handle> grouped_allreduce_async(const std::vector<at::Tensor>& tensors, const std::string& name = "",
                                            const AllreduceOptions& options = {});
std::vector<Handle> grouped_allreduce_async_(const std::vector<at::Tensor>& tensors, const std::string& name = "",
                                             const AllreduceOptions& options = {});

// allgather: every rank's tensor concatenated along the first dimension (whose length may
// differ per rank).
Handle allgather_async(const at::Tensor& tensor, const std::string& name = "", const ProcessSet& set = {});
std::vector<Handle> grouped_allgather_async(const std::vector<at::Tensor>& tensors, const std::string& name = "",
                                            const ProcessSet& set = {});

// broadcast: root's tensor (root is a rank of the global set, in `set`).
Handle broadcast_async(const at::Tensor& tensor, int root, const std::string& name = "", const ProcessSet& set = {});
Handle broadcast_async_(const at::Tensor& tensor, int root, const std::string& name = "", const ProcessSet& set = {});

// alltoall: splits[r] first-dimension rows go to the set's r-th rank (empty: equal parts).
// The result's received_splits() say how many rows came from each rank.
Handle alltoall_async(const at::Tensor& tensor, const std::vector<int64_t>& splits = {}, const std::string& name = "",
                      const ProcessSet& set = {});

// reducescatter: the reduction, split along the first dimension; this rank's part.
Handle reducescatter_async(const at::Tensor& tensor, const std::string& name = "",
                           const ReducescatterOptions& options = {});
std::vector<Handle> grouped_reducescatter_async(const std::vector<at::Tensor>& tensors, const std::string& name = "",
                                                const ReducescatterOptions& options = {});

// ---- Models and optimizers ----------------------------------------------------------------

// Overwrites each tensor with root's, in place (parameters are broadcast without autograd
// noticing). Every rank must give the same names, shapes and dtypes.
void broadcast_parameters(const NamedTensors& tensors, int root, const ProcessSet& set = {});
// A module's parameters and buffers.
void broadcast_parameters(const ::torch::nn::Module& module, int root, const ProcessSet& set = {});
// root's optimizer state and options (learning rate, momentum buffers, Adam's moments and
// step counts) on every rank, through the optimizer's own serialisation.
void broadcast_optimizer_state(::torch::optim::Optimizer& optimizer, int root, const ProcessSet& set = {});

struct DistributedOptimizerOptions {
  // Gradients are accumulated locally over this many backward passes, then reduced once.
  // As in Horovod, the passes' gradients add up: they are not divided by the count.
  int backward_passes_per_step = 1;
  // Or Sum, or Adasum: as horovod.torch, each rank then steps on its own gradients and the
  // ranks' parameter changes are combined with Adasum (global process set only; kolo's
  // Adasum conditions, docs/adasum.md).
  ReduceOp op = ReduceOp::Average;
  // Average only: gradients are divided by this before the sum and multiplied by
  // factor / size after it (Horovod's gradient_predivide_factor).
  double gradient_predivide_factor = 1.0;
  Compression compression = Compression::None;
  ProcessSet process_set{};
};

// Wraps an optimizer: each parameter's gradient is submitted to kolo by a hook on its
// gradient accumulator the moment backward has produced it, so reduction overlaps the rest
// of backward; step() waits for them all, then steps the wrapped optimizer.
class DistributedOptimizer {
 public:
  // Every parameter of `optimizer` that requires grad must be among `named_parameters`
  // (empty: names by position); the names must be unique, and alike on every rank. The
  // gradient of parameter <name> travels as "DistributedOptimizer.<name>", or as
  // "DistributedOptimizer<k>.<name>" from an optimizer made after k others on the same
  // process set, so that two optimizers' parameters never share a name. Bad options or
  // parameters throw kolo::Error (InvalidArgument).
  DistributedOptimizer(::torch::optim::Optimizer& optimizer, const NamedTensors& named_parameters,
                       DistributedOptimizerOptions options = {});
  // model->named_parameters() as it comes.
  DistributedOptimizer(::torch::optim::Optimizer& optimizer,
                       const ::torch::OrderedDict<std::string, at::Tensor>& named_parameters,
                       DistributedOptimizerOptions options = {})
      : DistributedOptimizer(optimizer, named_parameters.pairs(), std::move(options)) {}
  ~DistributedOptimizer();
  DistributedOptimizer(const DistributedOptimizer&) = delete;
  DistributedOptimizer& operator=(const DistributedOptimizer&) = delete;

  // Waits for every gradient of this step; a parameter whose gradient backward did not
  // produce is reduced as zeros, so that every rank submits the same names. A reduction
  // that failed throws its kolo::Error (after every one is done); the optimizer can go on.
  // A backward pass beyond backward_passes_per_step before it throws InvalidArgument.
  void synchronize();
  // synchronize() (unless it was called since the last step), then the wrapped step.
  void step();
  // The wrapped zero_grad(); InvalidArgument between a backward pass and synchronize().
  void zero_grad();
  ::torch::optim::Optimizer& optimizer();

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;  // shared with the hooks, which outlive nothing they touch
};

}  // namespace kolo::torch
