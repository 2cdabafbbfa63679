// What the DistributedOptimizer tests share: a small conv net in float64, a deterministic
// data set that every rank can make whole, and one training loop that runs either
// data-parallel (each rank on its slice, through a DistributedOptimizer) or as the
// single-process reference (the whole batch, the plain optimizer). Each rank computes the
// reference itself, so one mpirun checks np ranks against one process.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kolo/torch.h"

namespace kolo_torch_test {

// conv 1->3 (3x3) on 6x6 images, relu, then a linear layer to 4 classes; `extra`, a second
// head, joins only where a run asks for it (a parameter some ranks leave unused).
struct NetImpl : ::torch::nn::Module {
  NetImpl();
  at::Tensor forward(const at::Tensor& x, bool use_extra = false);

  ::torch::nn::Conv2d conv{nullptr};
  ::torch::nn::Linear fc{nullptr}, extra{nullptr};
};
TORCH_MODULE(Net);

// A net whose initial weights depend on `seed` only.
Net make_net(uint64_t seed);

using MakeOptimizer = std::function<std::unique_ptr<::torch::optim::Optimizer>(std::vector<at::Tensor>)>;
MakeOptimizer sgd_with_momentum();
MakeOptimizer adam();

struct Run {
  MakeOptimizer make_optimizer;
  int steps = 3;
  int passes = 1;        // backward passes per step (each on its own batch)
  int64_t per_rank = 4;  // rows of each batch per rank
  kolo::torch::DistributedOptimizerOptions options{};
  // Whether rank r's part of the batch goes through `extra` at a step (empty: never).
  std::function<bool(int step, int rank)> uses_extra;
  // The reference's loss is multiplied by this (Sum: the ranks' gradients add up).
  double reference_loss_scale = 1.0;
};

// The model after a run: data-parallel on this rank's slices, or the single-process
// reference on whole batches.
Net train_distributed(const Run& run);
Net train_reference(const Run& run);

// Every parameter and buffer, flattened into one vector (in the module's order).
at::Tensor flat_parameters(const ::torch::nn::Module& module);
// Every rank's `t` (1-D, the same length everywhere), as rows of a [size, n] tensor.
at::Tensor gather_rows(const at::Tensor& t);

}  // namespace kolo_torch_test
