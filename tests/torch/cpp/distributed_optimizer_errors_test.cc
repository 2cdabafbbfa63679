// DistributedOptimizer's errors under mpirun: bad options and parameter lists at
// construction, misuse between backward and step, a step that fails on every rank with
// kolo's own error, and hooks that outlive their optimizer.
#include "catch_after_torch.h"
#include "training.h"

using namespace kolo_torch_test;
using Catch::Matchers::Contains;

namespace {

kolo::StatusCode code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const kolo::Error& e) {
    INFO(e.what());
    return e.code();
  }
  return kolo::StatusCode::Ok;
}

at::Tensor images(int64_t rows) { return at::randn({rows, 1, 6, 6}, at::kDouble); }

}  // namespace

TEST_CASE("DistributedOptimizer: bad options and parameter lists are InvalidArgument", "[torch][errors]") {
  Net net = make_net(7);
  ::torch::optim::SGD sgd(net->parameters(), 0.1);
  const kolo::torch::NamedTensors named = net->named_parameters().pairs();
  auto make = [&](kolo::torch::DistributedOptimizerOptions o, const kolo::torch::NamedTensors& n) {
    return [&sgd, o, n] { kolo::torch::DistributedOptimizer opt(sgd, n, o); };
  };
  using Options = kolo::torch::DistributedOptimizerOptions;
  CHECK(code_of(make(Options{.op = kolo::ReduceOp::Sum, .gradient_predivide_factor = 2.0}, named)) ==
        kolo::StatusCode::InvalidArgument);
  CHECK(code_of(make(Options{.op = kolo::ReduceOp::Adasum, .gradient_predivide_factor = 2.0}, named)) ==
        kolo::StatusCode::InvalidArgument);
  CHECK(code_of(make(Options{.gradient_predivide_factor = 0.0}, named)) == kolo::StatusCode::InvalidArgument);
  CHECK(code_of(make(Options{.backward_passes_per_step = 0}, named)) == kolo::StatusCode::InvalidArgument);
  CHECK(code_of(make(Options{.op = kolo::ReduceOp::Max}, named)) == kolo::StatusCode::InvalidArgument);
  kolo::torch::NamedTensors twice = named;
  twice.back().first = twice.front().first;
  CHECK_THROWS_WITH(make({}, twice)(), Contains("given twice"));
  kolo::torch::NamedTensors missing(named.begin(), named.end() - 1);
  CHECK_THROWS_WITH(make({}, missing)(), Contains("not among the named parameters"));
  CHECK(code_of(make({}, named)) == kolo::StatusCode::Ok);
}

TEST_CASE("DistributedOptimizer: zero_grad between backward and step is refused", "[torch][errors]") {
  Net net = make_net(7);
  ::torch::optim::SGD sgd(net->parameters(), 0.1);
  kolo::torch::DistributedOptimizer opt(sgd, net->named_parameters());
  net->forward(images(2)).sum().backward();
  CHECK_THROWS_WITH(opt.zero_grad(), Contains("zero_grad() was called after backward"));
  opt.step();
  CHECK_NOTHROW(opt.zero_grad());
}

// The extra pass is refused before its gradient is added: kolo may be reducing the
// gradient at that moment.
TEST_CASE("DistributedOptimizer: more backward passes than backward_passes_per_step are refused", "[torch][errors]") {
  Net net = make_net(7);
  ::torch::optim::SGD sgd(net->parameters(), 0.1);
  kolo::torch::DistributedOptimizer opt(sgd, net->named_parameters(), {.backward_passes_per_step = 2});
  const at::Tensor x = images(2);
  net->forward(x).sum().backward();
  net->forward(x).sum().backward();
  CHECK_THROWS_WITH(net->forward(x).sum().backward(), Contains("more than backward_passes_per_step (2)"));
  opt.synchronize();  // the second pass's reductions, on every rank
  const at::Tensor expected = [&] {
    Net local = make_net(7);
    local->forward(x).sum().backward();
    return 2 * local->fc->weight.grad();  // two passes, every rank alike: the average is the sum
  }();
  CHECK(at::allclose(net->fc->weight.grad(), expected));
}

// Ranks that disagree on a gradient's shape: kolo's Mismatch, with kolo's message naming the
// tensor, from step() on every rank; nothing is stepped.
TEST_CASE("DistributedOptimizer: a step that fails gives every rank kolo's error", "[torch][errors]") {
  if (kolo::size() < 2) return;
  ::torch::manual_seed(1);
  at::Tensor w = at::randn({3, kolo::rank() == 0 ? 2 : 3}, at::kDouble).requires_grad_();
  const at::Tensor before = w.detach().clone();
  ::torch::optim::SGD sgd({w}, 0.1);
  kolo::torch::DistributedOptimizer opt(sgd, kolo::torch::NamedTensors{{"rank_dependent_weight", w}});
  at::ones({1, 3}, at::kDouble).mm(w).sum().backward();
  try {
    opt.step();
    FAIL("step() did not throw");
  } catch (const kolo::Error& e) {
    CHECK(e.code() == kolo::StatusCode::Mismatch);
    CHECK_THAT(e.what(), Contains("rank_dependent_weight"));
  }
  CHECK(at::equal(w.detach(), before));
  // The optimizer is usable again: the next step's reductions are new ones.
  opt.zero_grad();
}

TEST_CASE("DistributedOptimizer: hooks of a destroyed optimizer do nothing", "[torch][errors]") {
  Net net = make_net(7);
  ::torch::optim::SGD sgd(net->parameters(), 0.1);
  const at::Tensor x = images(2);
  at::Tensor loss = net->forward(x).sum();  // a graph that holds the accumulators
  { kolo::torch::DistributedOptimizer opt(sgd, net->named_parameters()); }
  loss.backward();  // nothing is submitted: the gradients stay this rank's own
  Net local = make_net(7);
  local->forward(x).sum().backward();
  CHECK(at::equal(net->fc->weight.grad(), local->fc->weight.grad()));
  // A new optimizer on the same parameters works (the old hooks were removed).
  kolo::torch::DistributedOptimizer opt(sgd, net->named_parameters());
  opt.zero_grad();
  net->forward(x).sum().backward();
  opt.step();
}
