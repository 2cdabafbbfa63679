// Data-parallel training on top of the runtime (include/kolo/kolo.h), as Horovod's
// hvd.DistributedOptimizer does it: each gradient is submitted to kolo the moment backward
// has produced it, so communication overlaps the rest of backward; step() waits for them
// all, then updates. Part of kolo/models.h.
//
//   kolo::init();
//   auto net = kolo::models::mnist_convnet();
//   kolo::models::SGD sgd(net->parameters(), {.lr = kolo::models::scaled_lr(0.01)});
//   kolo::models::DistributedOptimizer opt(sgd, *net);
//   kolo::models::broadcast_parameters(*net, 0);
//   for (...) { opt.zero_grad(); net->backward(loss(net->forward(x)).grad); opt.step(); }
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint.h"
#include "kolo/kolo.h"
#include "optim.h"

namespace kolo::models {

class Module;
class Net;
struct Parameter;

enum class Compression : int {
  None,  // gradients travel as float32
  FP16,  // cast to float16 for the wire, back to float32 after (as hvd.Compression.fp16)
};

struct DistributedOptions {
  // Average (the default, as Horovod) or Sum of the gradients; or Adasum, which steps each
  // rank on its own gradients and combines the ranks' parameter changes (Horovod's Adasum
  // optimizer; docs/distributed.md).
  ReduceOp op = ReduceOp::Average;
  // Gradients are divided by this before the sum and by size()/factor after it (Horovod's
  // gradient_predivide_factor; 1 = divide after). Only with op Average.
  double gradient_predivide_factor = 1.0;
  // Backward passes whose gradients accumulate locally before one allreduce; step() only
  // communicates and updates on every n-th call. The passes' gradients add up (as in
  // horovod.torch): they are not divided by n.
  int backward_passes_per_step = 1;
  Compression compression = Compression::None;
  // Prefix of the runtime's tensor names ("<prefix><parameter name>"): two optimizers in
  // one program need different prefixes.
  std::string name_prefix = "grad/";
  // The node's ranks keep one copy of the parameters and of the optimizer's state in shared
  // memory, and each rank's gradients there too; after backward each rank averages 1/p of
  // the gradients where the others wrote them and updates that 1/p of the parameters (no
  // allreduce: docs/distributed.md, "Node-shared update"). Measured on a 2-core machine, it
  // costs about what a one-rank job's update does; the allreduce and a full update about
  // twice that. Makes the constructor a collective; the parameters become local rank 0's
  // values. After step() only this rank's share of its gradients holds the average
  // (synchronize() puts it in all of them). Ignored, with a message on stderr, where it
  // cannot serve: more than one node, GPU parameters, op Adasum, compression, an optimizer
  // other than SGD, Adam and Adadelta, or too little shared memory (/dev/shm).
  bool node_shared_update = false;
};

// Wraps an optimizer over (a subset of) net's parameters. Installs the net's grad-ready
// hook (replacing any other); the optimizer and the net must outlive this object.
// Each pass is zero_grad(), forward, backward, step(), on every rank.
class DistributedOptimizer {
 public:
  // Throws kolo::Error (InvalidArgument) for options out of range, two parameters with one
  // name, or kolo not initialised.
  DistributedOptimizer(Optimizer& optimizer, Module& net, const DistributedOptions& options = {});
  ~DistributedOptimizer();  // removes the hook, waits for handles still in flight
  DistributedOptimizer(const DistributedOptimizer&) = delete;
  DistributedOptimizer& operator=(const DistributedOptimizer&) = delete;

  // Waits for every gradient of this pass (submitting any the hook has not seen, such as
  // those of unused parameters), then applies the wrapped optimizer's update. With
  // backward_passes_per_step = n, only every n-th call communicates and updates; returns
  // whether this call did. Throws kolo::Error if a collective failed (the runtime's
  // timeouts bound the wait); the gradients are then unusable, the next pass starts afresh.
  bool step();
  // Averages the gradients accumulated so far now, without updating (hvd's synchronize()):
  // for gradient clipping and the like between synchronize() and step(); that step()
  // then updates without communicating again, even before the n-th pass.
  void synchronize();
  // Zeroes the gradients, except between the passes of one accumulated step. Throws
  // kolo::Error if gradients are still being averaged (after backward, before step()).
  void zero_grad();

  Optimizer& optimizer() { return optimizer_; }
  double lr() const { return optimizer_.lr(); }
  void set_lr(double lr) { optimizer_.set_lr(lr); }

 private:
  struct Impl;
  Optimizer& optimizer_;
  std::unique_ptr<Impl> impl_;
};

// Base learning rate × size() (Goyal et al.: scale the rate with the global batch).
double scaled_lr(double base_lr);
// The warmup of Goyal et al. for a rate already scaled by size(): from base_lr (factor
// 1/size) to base_lr × size linearly over warmup_epochs; compose with other schedules.
std::unique_ptr<LrSchedule> size_warmup(double warmup_epochs);

// Overwrites every parameter and buffer (BN running stats) with root's, bit for bit.
// Throws kolo::Error on every rank, changing nothing, if the ranks' nets differ in names
// or shapes. Collective: call on every rank, before any rank has joined.
void broadcast_parameters(Module& net, int root = 0);
// Overwrites the optimizer's state (momentum buffers, step count, lr) with root's. Ranks
// whose optimizer has no state yet (before the first step) receive root's, if any.
// Throws kolo::Error on every rank if the optimizers differ in kind or parameters, or if
// some rank cannot load root's state. Collective, as broadcast_parameters.
void broadcast_optimizer_state(Optimizer& optimizer, int root = 0);

// The average over ranks of a per-rank metric (loss, accuracy); name must be the same on
// every rank and unique among collectives in flight.
double average_metric(double value, const std::string& name);

// Turns every BatchNorm2d in net into a synchronised one: batch statistics (and the
// backward's sums) are reduced across ranks, as torch.nn.SyncBatchNorm and hvd.SyncBatchNorm.
// In training mode each such layer then makes three blocking allreduces per pass (named
// "syncbn/<layer>/..."), so every rank must run forward and backward on every pass (a
// joined rank counts as an empty batch). Eval mode uses the running statistics, locally.
void synchronize_batchnorm(Module& net);

// ---- rank 0 helpers, for the usual "print and save on the root" pattern ------------------

// Whether this is rank 0 (true when kolo is not initialised: a single process is its own root).
bool is_root();
// Prints `line` and a newline to stdout on rank 0 only, flushed at once (ranks' outputs
// interleave otherwise).
void print_on_root(const std::string& line);
// Rank 0 writes make_checkpoint(net, optimizer, epoch) to path with save_checkpoint (atomic:
// a crash never leaves half a file under path); the other ranks return at once. Not a
// collective, so it is safe after other ranks have joined; throws kolo::Error on rank 0 if
// the file cannot be written.
void save_checkpoint_on_root(Module& net, const Optimizer* optimizer, int64_t epoch, const std::string& path);
// The same for a checkpoint with more in it (RNG states, metadata): `make` runs on rank 0 only.
void save_checkpoint_on_root(const std::function<Checkpoint()>& make, const std::string& path);

}  // namespace kolo::models
