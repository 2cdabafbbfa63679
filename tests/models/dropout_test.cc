// Dropout on the CPU (its GPU path, which draws the same masks, is tests/models/gpu/):
// inverted dropout as torch.nn.Dropout, masks from the layer's seed, the identity in eval.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "kolo/models.h"

using namespace kolo::models;

namespace {
Tensor counting(int64_t n) {
  Tensor t({n});
  for (int64_t i = 0; i < n; ++i) t[i] = static_cast<float>(i + 1);
  return t;
}
}  // namespace

TEST_CASE("dropout keeps each element with probability 1 - p and scales it by 1 / (1 - p)", "[dropout]") {
  Dropout dropout(0.25, 7);
  const Tensor x = counting(20000);
  const Tensor y = dropout.forward(x);
  // The mask is the layer's generator, one Bernoulli draw per element in order.
  std::mt19937_64 rng(7);
  std::bernoulli_distribution keep(0.75);
  const float scale = static_cast<float>(1.0 / 0.75);
  int64_t dropped = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float want = keep(rng) ? x[i] * scale : 0.0f;
    REQUIRE(y[i] == want);
    dropped += y[i] == 0.0f;
  }
  CHECK(std::abs(double(dropped) / double(x.numel()) - 0.25) < 0.02);

  // The gradient goes through the same mask.
  const Tensor dx = dropout.backward(Tensor::full({20000}, 2.0f));
  for (int64_t i = 0; i < x.numel(); ++i) REQUIRE(dx[i] == (y[i] == 0.0f ? 0.0f : 2.0f * scale));
}

TEST_CASE("dropout with the same seed draws the same masks, and is the identity in eval mode and at p = 0", "[dropout]") {
  Dropout a(0.5, 3), b(0.5, 3);
  const Tensor x = counting(100);
  for (int step = 0; step < 3; ++step) {
    const Tensor ya = a.forward(x), yb = b.forward(x);
    for (int64_t i = 0; i < x.numel(); ++i) REQUIRE(ya[i] == yb[i]);
  }
  a.eval();
  CHECK(a.forward(x).data() == x.data());
  CHECK(a.backward(x).data() == x.data());
  Dropout none(0.0);
  CHECK(none.forward(x).data() == x.data());
}

TEST_CASE("dropout's backward rejects a gradient of another size", "[dropout]") {
  Dropout dropout(0.5, 1);
  dropout.forward(counting(10));
  CHECK_THROWS_WITH(dropout.backward(counting(11)), Catch::Contains("does not match its input"));
}
