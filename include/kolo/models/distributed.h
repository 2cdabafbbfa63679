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
#include <memory>
#include <string>
#include <vector>

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
  // Average (the default, as Horovod) or Sum.
  ReduceOp op = ReduceOp::Average;
  // Gradients are divided by this before the sum and by size()/factor after it (Horovod's
  // gradient_predivide_factor; 1 = divide after). Only with op Average.
  double gradient_predivide_factor = 1.0;
  // Backward passes whose gradients accumulate locally before one allreduce; step() only
  // communicates and updates on every n-th call. The accumulated sum is divided by n.
  int backward_passes_per_step = 1;
  Compression compression = Compression::None;
  // Prefix of the runtime's tensor names ("<prefix><parameter name>"): two optimizers in
  // one program need different prefixes.
  std::string name_prefix = "grad/";
};

// Wraps an optimizer over (a subset of) net's parameters. Installs the net's grad-ready
// hook; the optimizer and the net must outlive this object.
class DistributedOptimizer {
 public:
  DistributedOptimizer(Optimizer& optimizer, Module& net, const DistributedOptions& options = {});
  ~DistributedOptimizer();  // removes the hook, waits for handles still in flight
  DistributedOptimizer(const DistributedOptimizer&) = delete;
  DistributedOptimizer& operator=(const DistributedOptimizer&) = delete;

  // Waits for every gradient of this pass (submitting any the hook has not seen), then
  // applies the wrapped optimizer's update. With backward_passes_per_step = n, only every
  // n-th call communicates and updates; returns whether this call did. Throws kolo::Error
  // if a collective failed.
  bool step();
  // Waits for and applies the averaged gradients without updating (hvd's synchronize()).
  void synchronize();
  // Zeroes the gradients, except between the passes of one accumulated step.
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
void broadcast_parameters(Module& net, int root = 0);
// Overwrites the optimizer's state (momentum buffers, step count, lr) with root's. Ranks
// whose optimizer has no state yet (before the first step) receive root's, if any.
void broadcast_optimizer_state(Optimizer& optimizer, int root = 0);

// The average over ranks of a per-rank metric (loss, accuracy); name must be the same on
// every rank and unique among collectives in flight.
double average_metric(double value, const std::string& name);

// Turns every BatchNorm2d in net into a synchronised one: batch statistics (and the
// backward's sums) are reduced across ranks, as torch.nn.SyncBatchNorm and hvd.SyncBatchNorm.
void synchronize_batchnorm(Module& net);

// Rank 0 only helpers for the usual "print and save on the root" pattern.
bool is_root();

}  // namespace kolo::models
