// broadcast_parameters and broadcast_optimizer_state: after them every rank holds root's
// values bit for bit. Each rank knows root's values by rebuilding them itself (same seed,
// same steps), and root is the last rank, so that a broadcast from rank 0 by mistake fails.
#include "dist_util.h"

using namespace kolo_dist_test;
using Catch::Matchers::Contains;
using kolo_test::rank;
using kolo_test::size;

namespace {

// A net whose parameters and buffers (running statistics, batch counts) depend on `owner`.
std::unique_ptr<Net> net_of(int owner) {
  auto net = conv_bn_net();
  fill_seeded(*net, 100 + owner);
  return net;
}

std::unique_ptr<Parameter> parameter(const std::string& name, std::vector<int64_t> shape) {
  auto p = std::make_unique<Parameter>();
  p->name = name;
  p->value = Tensor::full(shape, 0.5f);
  p->grad = Tensor(std::move(shape));
  return p;
}

// Two parameters and an optimizer of the given kind, after `steps` updates with gradients
// that depend on `owner`, and a learning rate that does too.
struct Trained {
  std::unique_ptr<Parameter> a = parameter("a", {3}), b = parameter("b", {2, 2});
  std::unique_ptr<Optimizer> optimizer;
  Trained(const std::string& kind, int owner, int steps) {
    if (kind == "sgd") optimizer = std::make_unique<SGD>(std::vector<Parameter*>{a.get(), b.get()},
                                                         SgdOptions{.lr = 0.1 * (owner + 1), .momentum = 0.9});
    else optimizer = std::make_unique<Adam>(std::vector<Parameter*>{a.get(), b.get()}, AdamOptions{.lr = 0.01 * (owner + 1)});
    for (int s = 0; s < steps; ++s) {
      for (Parameter* p : {a.get(), b.get()})
        for (int64_t i = 0; i < p->grad.numel(); ++i) p->grad[i] = float(owner + 1) * 0.25f * float(i + 1) + float(s);
      optimizer->step();
    }
  }
};

void require_same_state(const OptimizerState& got, const OptimizerState& want) {
  CHECK(got.scalars == want.scalars);
  REQUIRE(got.tensors.size() == want.tensors.size());
  for (const auto& [name, values] : want.tensors) {
    INFO(name);
    REQUIRE(got.tensors.count(name));
    const std::vector<float>& mine = got.tensors.at(name);
    REQUIRE(mine.size() == values.size());
    CHECK(std::memcmp(mine.data(), values.data(), values.size() * sizeof(float)) == 0);
  }
}

}  // namespace

TEST_CASE("broadcast_parameters: every rank ends with root's parameters and buffers, bit for bit",
          "[distributed][broadcast]") {
  const int root = size() - 1;
  auto net = net_of(rank());
  broadcast_parameters(*net, root);
  auto expected = net_of(root);
  require_identical(*net, *expected);
}

TEST_CASE("broadcast_parameters: nets that differ fail on every rank and change nothing",
          "[distributed][broadcast][errors]") {
  if (size() < 2) return;
  auto net = conv_bn_net(/*wide=*/rank() == 1);
  fill_seeded(*net, 100 + rank());
  REQUIRE_THROWS_WITH(broadcast_parameters(*net, 0), Contains("the nets differ: rank(s) 1 have other"));
  auto untouched = conv_bn_net(rank() == 1);
  fill_seeded(*untouched, 100 + rank());
  require_identical(*net, *untouched);
  REQUIRE_THROWS_WITH(broadcast_parameters(*net, size()), Contains("root " + std::to_string(size()) + " is not a rank"));
}

TEST_CASE("broadcast_optimizer_state: SGD momentum and lr are root's everywhere, also on ranks without state",
          "[distributed][broadcast]") {
  const int root = size() - 1;
  // Rank 0 has not stepped yet (no momentum buffers); the others have, with their own values.
  Trained mine("sgd", rank(), rank() == 0 && size() > 1 ? 0 : 1);
  broadcast_optimizer_state(*mine.optimizer, root);
  const Trained expected("sgd", root, 1);
  require_same_state(mine.optimizer->state(), expected.optimizer->state());
  CHECK(mine.optimizer->lr() == expected.optimizer->lr());

  // From a root without state (rank 0 here): every rank's buffers go, as before a first step.
  Trained other("sgd", rank(), rank() == 0 ? 0 : 1);
  broadcast_optimizer_state(*other.optimizer, 0);
  const Trained fresh("sgd", 0, 0);
  require_same_state(other.optimizer->state(), fresh.optimizer->state());
  CHECK(other.optimizer->state().tensors.empty());
}

TEST_CASE("broadcast_optimizer_state: Adam's moments and step count are root's everywhere",
          "[distributed][broadcast]") {
  const int root = size() - 1;
  Trained mine("adam", rank(), rank() + 1);  // rank r has taken r + 1 steps
  broadcast_optimizer_state(*mine.optimizer, root);
  Trained expected("adam", root, root + 1);
  require_same_state(mine.optimizer->state(), expected.optimizer->state());
  CHECK(mine.optimizer->state().scalars.at("step") == root + 1);
  // And it carries on exactly as root does.
  for (Trained* t : {&mine, &expected}) {
    for (Parameter* p : {t->a.get(), t->b.get()}) {
      p->value.fill(0.5f);
      p->grad.fill(1.0f);
    }
    t->optimizer->step();
  }
  CHECK(std::memcmp(mine.a->value.data(), expected.a->value.data(), 3 * sizeof(float)) == 0);
}

TEST_CASE("broadcast_optimizer_state: optimizers that differ or cannot load root's state fail on every rank",
          "[distributed][broadcast][errors]") {
  if (size() < 2) return;
  Trained mine(rank() == 1 ? "adam" : "sgd", rank(), 1);
  REQUIRE_THROWS_WITH(broadcast_optimizer_state(*mine.optimizer, 0),
                      Contains("rank(s) 1 have another kind of optimizer"));

  // Same kind and parameters, but rank 1's SGD has no momentum: it cannot take root's buffers.
  auto a = parameter("a", {3});
  SGD sgd({a.get()}, {.lr = 0.1, .momentum = rank() == 1 ? 0.0 : 0.9});
  a->grad.fill(1.0f);
  sgd.step();
  REQUIRE_THROWS_WITH(broadcast_optimizer_state(sgd, 0), Contains("rank(s) 1 could not load root rank 0's state"));
}
