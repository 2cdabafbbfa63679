// BatchNorm2d's stats reducer (SyncBatchNorm's hook) on the CPU, in one process: what the
// layer hands it, and what the reduced statistics do. The GPU path is checked against this
// in tests/models/gpu/layers_test.cc; across real ranks, tests/models/distributed/.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "kolo/models.h"

using namespace kolo::models;

namespace {

Tensor normal(std::vector<int64_t> shape, uint64_t seed, float mean) {
  Tensor t(std::move(shape));
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n(mean, 2.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t[i] = n(rng);
  return t;
}

double max_diff(const Tensor& a, const Tensor& b) {
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) worst = std::max(worst, std::abs(double(a[i]) - double(b[i])));
  return worst;
}

}  // namespace

TEST_CASE("batch norm hands its reducer the channel sums with the count, the centered squares, then the gradient sums",
          "[batchnorm][syncbn]") {
  BatchNorm2d bn({.channels = 3});
  std::vector<std::vector<double>> handed;
  bn.set_stats_reducer([&](std::vector<double>& v) { handed.push_back(v); });
  const Tensor x = normal({2, 3, 2, 2}, 1, 5.0f);
  bn.forward(x);
  bn.backward(Tensor::full(x.shape(), 1.0f));
  REQUIRE(handed.size() == 3);
  REQUIRE(handed[0].size() == 4);
  REQUIRE(handed[1].size() == 3);
  REQUIRE(handed[2].size() == 6);
  CHECK(handed[0][3] == 8.0);  // N·H·W
  for (int64_t c = 0; c < 3; ++c) {
    double sum = 0, squares = 0;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t i = 0; i < 4; ++i) sum += x[(n * 3 + c) * 4 + i];
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t i = 0; i < 4; ++i) squares += std::pow(x[(n * 3 + c) * 4 + i] - sum / 8, 2);
    CHECK(handed[0][static_cast<std::size_t>(c)] == Approx(sum).epsilon(1e-12));
    CHECK(handed[1][static_cast<std::size_t>(c)] == Approx(squares).epsilon(1e-12));
    CHECK(handed[2][static_cast<std::size_t>(c)] == Approx(8.0).epsilon(1e-12));  // Σ dy
    CHECK(std::abs(handed[2][static_cast<std::size_t>(3 + c)]) < 1e-5);          // Σ xhat = 0
  }
}

TEST_CASE("batch norm reduced over two equal batches normalises as one batch", "[batchnorm][syncbn]") {
  // What the GPU test checks too: the other "rank" has the same batch, so the global
  // statistics are this batch's and only the running variance's count changes.
  BatchNorm2d synced({.channels = 4}), alone({.channels = 4});
  synced.set_stats_reducer([](std::vector<double>& v) {
    for (double& x : v) x *= 2;
  });
  synced.set_needs_input_grad(true);
  alone.set_needs_input_grad(true);
  const Tensor x = normal({3, 4, 4, 4}, 2, 1.0f), dy = normal(x.shape(), 3, 0.0f);
  CHECK(max_diff(synced.forward(x), alone.forward(x)) < 1e-5);
  CHECK(max_diff(synced.backward(dy), alone.backward(dy)) < 1e-5);
  CHECK(max_diff(synced.weight().grad, alone.weight().grad) < 1e-5);  // this rank's own
  CHECK(max_diff(synced.running_mean(), alone.running_mean()) < 1e-6);
  const double m = 3 * 16;
  for (int64_t c = 0; c < 4; ++c) {
    const double batch_var = (double(alone.running_var()[c]) - 0.9) / 0.1 * (m - 1) / m;
    CHECK(synced.running_var()[c] == Approx(0.9 + 0.1 * batch_var * 2 * m / (2 * m - 1)).epsilon(1e-5));
  }
}
