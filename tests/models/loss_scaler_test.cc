// Dynamic loss scaling (kolo/models/amp.h) against torch.cuda.amp.GradScaler's rules.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "kolo/models.h"

using namespace kolo::models;

TEST_CASE("loss scaler starts at 2^16 and backs off by half on inf/NaN", "[loss-scaler]") {
  LossScaler scaler;
  CHECK(scaler.scale() == 65536.0f);
  scaler.update(false);
  scaler.update(false);
  CHECK(scaler.growth_tracker() == 2);
  scaler.update(true);
  CHECK(scaler.scale() == 32768.0f);
  CHECK(scaler.growth_tracker() == 0);
  scaler.update(true);
  CHECK(scaler.scale() == 16384.0f);
}

TEST_CASE("loss scaler doubles after growth_interval good steps in a row", "[loss-scaler]") {
  LossScaler scaler;
  for (int i = 0; i < 1999; ++i) scaler.update(false);
  CHECK(scaler.scale() == 65536.0f);
  CHECK(scaler.growth_tracker() == 1999);
  scaler.update(false);
  CHECK(scaler.scale() == 131072.0f);
  CHECK(scaler.growth_tracker() == 0);
  // An overflow in between restarts the count.
  for (int i = 0; i < 1500; ++i) scaler.update(false);
  scaler.update(true);
  for (int i = 0; i < 1999; ++i) scaler.update(false);
  CHECK(scaler.scale() == 65536.0f);
  scaler.update(false);
  CHECK(scaler.scale() == 131072.0f);
}

TEST_CASE("loss scaler follows GradScaler's sequence with custom options", "[loss-scaler]") {
  // Reference: the same rules written out in float32, as torch._amp_update_scale_ does.
  LossScaler scaler({.init_scale = 8.0, .growth_factor = 3.0, .backoff_factor = 0.25, .growth_interval = 2});
  const bool overflow[] = {false, false, true, false, true, false, false, false, false};
  float want = 8.0f;
  int64_t tracker = 0;
  for (bool inf : overflow) {
    scaler.update(inf);
    if (inf) {
      want *= 0.25f;
      tracker = 0;
    } else if (++tracker == 2) {
      want *= 3.0f;
      tracker = 0;
    }
    CHECK(scaler.scale() == want);
    CHECK(scaler.growth_tracker() == tracker);
  }
}

TEST_CASE("loss scaler never grows into infinity", "[loss-scaler]") {
  LossScaler scaler({.init_scale = 2.0e38, .growth_factor = 2.0, .backoff_factor = 0.5, .growth_interval = 1});
  scaler.update(false);
  CHECK(scaler.scale() == 2.0e38f);
  CHECK(scaler.growth_tracker() == 0);
}

TEST_CASE("loss scaler rejects invalid options", "[loss-scaler]") {
  CHECK_THROWS_AS(LossScaler({.init_scale = 0}), kolo::Error);
  CHECK_THROWS_AS(LossScaler({.init_scale = 1e39}), kolo::Error);  // inf in float32
  CHECK_THROWS_AS(LossScaler({.growth_factor = 1.0}), kolo::Error);
  CHECK_THROWS_AS(LossScaler({.backoff_factor = 1.0}), kolo::Error);
  CHECK_THROWS_AS(LossScaler({.backoff_factor = 0.0}), kolo::Error);
  CHECK_THROWS_AS(LossScaler({.growth_interval = 0}), kolo::Error);
  CHECK_THROWS_WITH(LossScaler({.growth_factor = 0.5}), Catch::Contains("growth_factor"));
}

namespace {
// Counts its steps; the parameters' values stay as they are.
class CountingOptimizer : public Optimizer {
 public:
  using Optimizer::Optimizer;
  void step() override { ++steps; }
  OptimizerState state() const override { return {}; }
  void load_state(const OptimizerState&) override {}
  std::string name() const override { return "counting"; }
  int steps = 0;
};
}  // namespace

TEST_CASE("loss scaler unscales gradients, skips the step on inf/NaN and updates", "[loss-scaler]") {
  Parameter a{"a", Tensor({3}), Tensor::from({3}, {1024.0f, -2048.0f, 3.0f})};
  Parameter b{"b", Tensor({2}), Tensor::from({2}, {0.5f, 64.0f})};
  CountingOptimizer optimizer({&a, &b});
  LossScaler scaler({.init_scale = 1024.0, .growth_interval = 1});

  CHECK(scaler.step(optimizer));
  CHECK(optimizer.steps == 1);
  CHECK(a.grad[0] == 1.0f);
  CHECK(a.grad[1] == -2.0f);
  CHECK(a.grad[2] == 3.0f / 1024.0f);
  CHECK(b.grad[1] == 1.0f / 16.0f);
  CHECK(scaler.scale() == 2048.0f);  // grew: interval 1

  b.grad[0] = std::numeric_limits<float>::infinity();
  CHECK_FALSE(scaler.step(optimizer));
  CHECK(optimizer.steps == 1);
  CHECK(scaler.scale() == 1024.0f);
  b.grad[0] = std::nanf("");
  CHECK_FALSE(scaler.step(optimizer));
  CHECK(scaler.scale() == 512.0f);

  Tensor g = Tensor::from({2}, {1.0f, -0.25f});
  scaler.scale_gradient(g);
  CHECK(g[0] == 512.0f);
  CHECK(g[1] == -128.0f);
}

TEST_CASE("loss scaler state saves and loads with an optimizer's", "[loss-scaler]") {
  LossScaler scaler({.growth_interval = 10});
  scaler.update(true);
  for (int i = 0; i < 3; ++i) scaler.update(false);
  OptimizerState state;
  scaler.save(state);
  LossScaler restored;
  restored.load(state);
  CHECK(restored.scale() == 32768.0f);
  CHECK(restored.growth_tracker() == 3);
  CHECK_THROWS_AS(restored.load(OptimizerState{}), kolo::Error);
  state.scalars["loss_scale"] = -1;
  CHECK_THROWS_AS(restored.load(state), kolo::Error);
}
