// DistributedOptimizer's node_shared_update against its allreduce path: the same nets, the
// same batches, the same parameters and optimizer state after every step (to float
// rounding: at three ranks the two sum in different orders). At np 1 the option has
// nothing to share and the two paths are one.
#include <unistd.h>

#include <filesystem>

#include "dist_util.h"

using namespace kolo_dist_test;
using kolo_test::rank;
using kolo_test::size;

namespace {

constexpr int64_t kBatch = 4;  // per rank and pass

void require_close_state(const OptimizerState& got, const OptimizerState& want, double rel, double abs) {
  REQUIRE(got.tensors.size() == want.tensors.size());
  for (const auto& [key, values] : want.tensors) {
    INFO(key);
    REQUIRE(got.tensors.count(key) == 1);
    const std::vector<float>& g = got.tensors.at(key);
    REQUIRE(g.size() == values.size());
    require_close(g.data(), values.data(), static_cast<int64_t>(g.size()), rel, abs, key);
  }
  REQUIRE(got.scalars == want.scalars);
}

// Trains `shared_net` (node_shared_update) and `plain_net` (allreduce) side by side for
// `steps` steps of `passes` backward passes, each step from the shared net's parameters;
// with `synchronize_first`, both call synchronize() and halve their gradients (a clip)
// before step().
template <typename MakeOptimizer>
void compare_paths(MakeOptimizer make, DistributedOptions options, int steps, bool synchronize_first,
                   double rel = 1e-5, double abs = 1e-7) {
  const Dataset& data = mnist_data();
  auto shared_net = seeded_mnist(11), plain_net = seeded_mnist(11);
  auto shared_opt = make(*shared_net), plain_opt = make(*plain_net);
  options.name_prefix = "plain/";
  DistributedOptimizer plain(*plain_opt, *plain_net, options);
  options.name_prefix = "shared/";
  options.node_shared_update = true;
  DistributedOptimizer shared(*shared_opt, *shared_net, options);
  const int passes = options.backward_passes_per_step;
  for (int step = 0; step < steps; ++step) {
    copy_parameter_values(*shared_net, *plain_net);
    for (int pass = 0; pass < passes; ++pass) {
      const int64_t first = ((step * passes + pass) * size() + rank()) * kBatch;
      for (auto [net, opt] : {std::pair{shared_net.get(), &shared}, std::pair{plain_net.get(), &plain}}) {
        opt->zero_grad();
        train_pass(*net, data, first, kBatch);
        if (pass + 1 == passes) continue;
        REQUIRE_FALSE(opt->step());
      }
    }
    if (synchronize_first) {
      for (auto [net, opt] : {std::pair{shared_net.get(), &shared}, std::pair{plain_net.get(), &plain}}) {
        opt->synchronize();
        for (Parameter* p : net->parameters())  // what a clip between synchronize() and step() does
          for (int64_t i = 0; i < p->grad.numel(); ++i) p->grad[i] *= 0.5f;
      }
      require_close_parameters(*shared_net, *plain_net, rel, abs, /*grads=*/true);
    }
    REQUIRE(shared.step());
    REQUIRE(plain.step());
    require_close_parameters(*shared_net, *plain_net, rel, abs);
    require_close_state(shared_opt->state(), plain_opt->state(), rel, abs);
  }
}

// A seeded net, SGD and a node-shared DistributedOptimizer named `prefix`, after one
// backward pass on every rank's own batch.
struct AfterBackward {
  std::unique_ptr<Net> net;
  SGD sgd;
  DistributedOptimizer opt;

  AfterBackward(uint64_t seed, const std::string& prefix)
      : net(seeded_mnist(seed)), sgd(net->parameters(), {.lr = 0.1}),
        opt(sgd, *net, {.name_prefix = prefix, .node_shared_update = true}) {
    opt.zero_grad();
    train_pass(*net, mnist_data(), rank() * kBatch, kBatch);
  }
  std::vector<float> values() const {
    std::vector<float> all;
    for (Parameter* p : net->parameters()) all.insert(all.end(), p->value.data(), p->value.data() + p->value.numel());
    return all;
  }
};

}  // namespace

TEST_CASE("node_shared_update: SGD with momentum and decay steps as the allreduce path does",
          "[distributed][node_shared]") {
  compare_paths([](Net& net) { return std::make_unique<SGD>(net.parameters(), SgdOptions{.lr = 0.05, .momentum = 0.9,
                                                                                          .weight_decay = 1e-3}); },
                {}, 3, false);
}

TEST_CASE("node_shared_update: Adam, two accumulated passes, synchronize() and a clip before step()",
          "[distributed][node_shared]") {
  compare_paths([](Net& net) { return std::make_unique<Adam>(net.parameters(), AdamOptions{.lr = 1e-3}); },
                {.backward_passes_per_step = 2}, 2, true);
}

TEST_CASE("node_shared_update: op sum and a predivide factor", "[distributed][node_shared]") {
  const auto adadelta = [](Net& net) { return std::make_unique<Adadelta>(net.parameters(), AdadeltaOptions{}); };
  compare_paths(adadelta, {.op = kolo::ReduceOp::Sum}, 2, false);
  compare_paths(adadelta, {.gradient_predivide_factor = 2.5}, 2, true);
}

TEST_CASE("node_shared_update: options it cannot serve fall back to the allreduce", "[distributed][node_shared]") {
  // Float16 compression: both nets take the compressed allreduce (whose sums at three ranks
  // round in an order that varies with timing: float16's precision).
  compare_paths([](Net& net) { return std::make_unique<SGD>(net.parameters(), SgdOptions{.lr = 0.1}); },
                {.compression = Compression::FP16}, 2, false, 2e-3, 1e-5);
}

TEST_CASE("node_shared_update: the ranks share one copy while it lives, and own theirs after",
          "[distributed][node_shared]") {
  const Dataset& data = mnist_data();
  auto net = seeded_mnist(rank() + 20);  // different values on each rank: rank 0's win
  auto reference = seeded_mnist(20);
  SGD sgd(net->parameters(), {.lr = 0.1, .momentum = 0.9});
  {
    DistributedOptimizer opt(sgd, *net, {.node_shared_update = true});
    require_close_parameters(*net, *reference, 0, 0);
    opt.zero_grad();
    train_pass(*net, data, rank() * kBatch, kBatch);
    REQUIRE(opt.step());
  }
  const OptimizerState state = sgd.state();
  Parameter& first = *net->parameters()[0];
  const float before = first.value[0];
  // Private again: a change on rank 0 stays there (and the state is the whole state).
  if (rank() == 0) first.value[0] += 1.0f;
  float flag = 0;
  kolo::allreduce("node_shared_test/after", kolo::TensorView{&flag, kolo::DType::Float32, {1}});
  CHECK(first.value[0] == (rank() == 0 ? before + 1.0f : before));
  const std::vector<float>& momentum = state.tensors.at("momentum/" + first.name);
  int64_t nonzero = 0;
  for (float m : momentum) nonzero += m != 0;
  CHECK(nonzero > static_cast<int64_t>(momentum.size()) / 2);
}

TEST_CASE("node_shared_update: a parameter replaced after wrapping is an error, not a silent copy",
          "[distributed][node_shared]") {
  auto net = seeded_mnist(30);
  SGD sgd(net->parameters(), {.lr = 0.1});
  DistributedOptimizer opt(sgd, *net, {.node_shared_update = true});
  Parameter& first = *net->parameters()[0];
  first.value = first.value.clone();
  if (size() == 1) {
    REQUIRE(opt.step());  // nothing shared at one rank
    return;
  }
  REQUIRE_THROWS_WITH(opt.step(), Catch::Matchers::Contains("was replaced or moved"));
}

TEST_CASE("node_shared_update: a rank that has joined makes the others' step() throw, not average stale gradients",
          "[distributed][node_shared]") {
  if (size() == 1) return;  // nothing shared, nobody to join
  const Dataset& data = mnist_data();
  auto net = seeded_mnist(40);
  SGD sgd(net->parameters(), {.lr = 0.1});
  DistributedOptimizer opt(sgd, *net, {.name_prefix = "joined/", .node_shared_update = true});
  if (rank() == size() - 1) {
    bounded_join();
    return;
  }
  opt.zero_grad();
  train_pass(*net, data, rank() * kBatch, kBatch);
  REQUIRE_THROWS_WITH(opt.step(), Catch::Matchers::Contains("has joined"));
  bounded_join();
}

TEST_CASE("node_shared_update: ranks with different optimizers are refused at construction, not mapped wrong",
          "[distributed][node_shared]") {
  if (size() == 1) return;  // nothing shared
  auto net = seeded_mnist(50);
  // SGD keeps one kind of state (momentum), Adam two: their segments would differ in size.
  std::unique_ptr<Optimizer> optimizer;
  if (rank() == 0) optimizer = std::make_unique<SGD>(net->parameters(), SgdOptions{.lr = 0.1, .momentum = 0.9});
  else optimizer = std::make_unique<Adam>(net->parameters(), AdamOptions{});
  REQUIRE_THROWS_WITH(DistributedOptimizer(*optimizer, *net, {.name_prefix = "mixed/", .node_shared_update = true}),
                      Catch::Matchers::Contains("differs from rank 0"));
}

TEST_CASE("node_shared_update: ranks that disagree on synchronize() fail at once with a message",
          "[distributed][node_shared]") {
  if (size() == 1) return;
  AfterBackward job(60, "disagree/");
  const auto message = Catch::Matchers::Contains("every rank must call synchronize() before step(), or none");
  if (rank() == 0) REQUIRE_THROWS_WITH(job.opt.synchronize(), message);
  else REQUIRE_THROWS_WITH(job.opt.step(), message);
}

TEST_CASE("node_shared_update: stepping the wrapped optimizer directly is refused before it updates anything",
          "[distributed][node_shared]") {
  if (size() == 1) return;
  AfterBackward job(70, "direct/");
  job.opt.synchronize();
  const std::vector<float> before = job.values();
  REQUIRE_THROWS_WITH(job.sgd.step(), Catch::Matchers::Contains("must be stepped through the DistributedOptimizer"));
  const std::vector<float> after = job.values();
  // The parameters are shared: every rank reads them before any rank's step() below writes.
  float flag = 0;
  kolo::allreduce("direct/read", kolo::TensorView{&flag, kolo::DType::Float32, {1}});
  CHECK(after == before);
  REQUIRE(job.opt.step());  // the DistributedOptimizer's own step still works
}

TEST_CASE("node_shared_update: nothing is left in /dev/shm once the ranks have mapped the segment",
          "[distributed][node_shared]") {
  if (size() == 1) return;
  // Rank 0 names the segment after its process id.
  int64_t root_pid = getpid();
  kolo::broadcast("node_shared_test/pid", kolo::TensorView{&root_pid, kolo::DType::Int64, {1}}, 0);
  const auto leftovers = [&] {
    int n = 0;
    for (const auto& entry : std::filesystem::directory_iterator("/dev/shm"))
      n += entry.path().filename().string().starts_with("kolo-" + std::to_string(root_pid) + "-");
    return n;
  };
  auto net = seeded_mnist(80);
  SGD sgd(net->parameters(), {.lr = 0.1});
  DistributedOptimizer opt(sgd, *net, {.name_prefix = "leftovers/", .node_shared_update = true});
  CHECK(leftovers() == 0);
}
