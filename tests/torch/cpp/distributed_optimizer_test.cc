// kolo::torch::DistributedOptimizer under mpirun: np ranks, each on its slice of every
// batch, end with the weights that one process reaches on the whole batches (training.h),
// for each of the optimizer's options.
#include "catch_after_torch.h"
#include "training.h"

using namespace kolo_torch_test;

namespace {

// Float64 throughout: np ranks and one process differ by the order of their sums only.
void check_matches_reference(const Run& run, double rtol = 1e-9, double atol = 1e-12) {
  const at::Tensor got = flat_parameters(*train_distributed(run));
  const at::Tensor want = flat_parameters(*train_reference(run));
  const at::Tensor initial = flat_parameters(*make_net(7));
  INFO("rank " << kolo::rank() << " of " << kolo::size() << ": largest difference from the reference "
               << (got - want).abs().max().item<double>() << ", largest change from the start "
               << (want - initial).abs().max().item<double>());
  CHECK(!at::allclose(want, initial));  // the reference did train
  CHECK(at::allclose(got, want, rtol, atol));
}

}  // namespace

TEST_CASE("DistributedOptimizer: SGD with momentum on np ranks equals one process on the whole batch", "[torch]") {
  check_matches_reference({.make_optimizer = sgd_with_momentum()});
}

TEST_CASE("DistributedOptimizer: Adam on np ranks equals one process on the whole batch", "[torch]") {
  check_matches_reference({.make_optimizer = adam()});
}

// Horovod's semantics: the passes' gradients add up locally (they are not divided by the
// number of passes), and the sum is averaged over the ranks once.
TEST_CASE("DistributedOptimizer: backward_passes_per_step 2 sums two passes, then averages over the ranks",
          "[torch]") {
  Run run{.make_optimizer = sgd_with_momentum(), .passes = 2};
  run.options.backward_passes_per_step = 2;
  check_matches_reference(run);
  // Adam is not linear in the gradient: a division by the passes would show.
  run.make_optimizer = adam();
  check_matches_reference(run);
}

TEST_CASE("DistributedOptimizer: op Sum adds the ranks' gradients", "[torch]") {
  Run run{.make_optimizer = sgd_with_momentum(), .reference_loss_scale = static_cast<double>(kolo::size())};
  run.options.op = kolo::ReduceOp::Sum;
  run.options.backward_passes_per_step = 1;
  check_matches_reference(run);
}

TEST_CASE("DistributedOptimizer: gradient_predivide_factor splits the average and keeps its value", "[torch]") {
  for (double factor : {static_cast<double>(kolo::size()), 0.5}) {
    INFO("gradient_predivide_factor " << factor);
    Run run{.make_optimizer = adam()};
    run.options.gradient_predivide_factor = factor;
    check_matches_reference(run);
  }
}

TEST_CASE("DistributedOptimizer: fp16 compression reduces within half precision", "[torch]") {
  Run run{.make_optimizer = sgd_with_momentum()};
  run.options.compression = kolo::Compression::FP16;
  const at::Tensor got = flat_parameters(*train_distributed(run));
  // Every rank holds the same cast-back sum.
  const at::Tensor rows = gather_rows(got);
  for (int r = 1; r < kolo::size(); ++r) CHECK(at::equal(rows[r], rows[0]));
  CHECK(at::allclose(got, flat_parameters(*train_reference(run)), 1e-2, 1e-3));
}

// A parameter some ranks never reach on a step (rank 1 leaves `extra` out of steps 0 and
// 1; at step 0 its gradient is still undefined): those ranks submit zeros, so that every
// rank reduces the same names, and the average is the reference's mean of the slices.
TEST_CASE("DistributedOptimizer: a parameter unused on a rank is reduced as zeros there", "[torch]") {
  for (MakeOptimizer make : {sgd_with_momentum(), adam()}) {
    Run run{.make_optimizer = make, .uses_extra = [](int step, int rank) { return rank != 1 || step >= 2; }};
    check_matches_reference(run);
  }
}

// Adasum combines the ranks' parameter changes (as horovod.torch); of equal changes it is
// that change: ranks on the same data train as one process. (Unequal changes:
// tests/torch/contract, against kolo.torch.)
TEST_CASE("DistributedOptimizer: Adasum of equal updates is the update", "[torch]") {
  const int n = kolo::size();
  if ((n & (n - 1)) != 0) return;  // kolo's Adasum needs a power-of-two number of ranks
  Net net = make_net(7), reference = make_net(7);
  ::torch::optim::SGD inner(net->parameters(), 0.1), plain(reference->parameters(), 0.1);
  kolo::torch::DistributedOptimizerOptions options;
  options.op = kolo::ReduceOp::Adasum;
  kolo::torch::DistributedOptimizer opt(inner, net->named_parameters(), options);
  ::torch::manual_seed(3);
  const at::Tensor x = at::randn({4, 1, 6, 6}, at::kDouble);
  const at::Tensor y = at::randint(0, 4, {4}, at::kLong);
  for (int step = 0; step < 2; ++step) {
    opt.zero_grad();
    plain.zero_grad();
    net->forward(x).pow(2).mean().backward();
    reference->forward(x).pow(2).mean().backward();
    opt.step();
    plain.step();
  }
  CHECK(at::allclose(flat_parameters(*net), flat_parameters(*reference), 1e-9, 1e-12));
}

// A process set of ranks 0 and 1 only (a dynamic set, made and removed by every rank):
// their gradients are averaged between them; the other ranks' stay their own.
TEST_CASE("DistributedOptimizer: on a process set, only its ranks average", "[torch]") {
  if (kolo::size() < 3) return;
  const kolo::ProcessSet pair = kolo::add_process_set({0, 1});
  Net net = make_net(7);
  ::torch::optim::SGD inner(net->parameters(), 0.1);
  kolo::torch::DistributedOptimizerOptions options;
  options.process_set = pair;
  {
    kolo::torch::DistributedOptimizer opt(inner, net->named_parameters(), options);
    ::torch::manual_seed(100 + kolo::rank());  // each rank's own data
    const at::Tensor x = at::randn({4, 1, 6, 6}, at::kDouble);
    opt.zero_grad();
    net->forward(x).pow(2).mean().backward();
    opt.step();
  }
  const at::Tensor rows = gather_rows(flat_parameters(*net));
  CHECK(at::equal(rows[0], rows[1]));
  CHECK(!at::equal(rows[0], rows[2]));
  kolo::remove_process_set(pair);
}
