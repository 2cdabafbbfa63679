// Helpers for the distributed-training tests: one global data set that every rank can
// read in full, so that each rank computes the single-process reference itself, next to
// its own share of the distributed run; nets built and seeded alike; comparisons that
// report the worst element.
#pragma once

#include <cmath>
#include <cstring>
#include <future>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kolo/models.h"
#include "support/mpi_util.h"

namespace kolo_dist_test {

using namespace kolo::models;

// The MNIST-shaped global data set (seeded, identical on every rank).
inline const Dataset& mnist_data() {
  static const Dataset data = synthetic_dataset(/*count=*/96, 1, 28, 28, 10, /*seed=*/2024);
  return data;
}

// Rows [first, first + count) of a data set as an NCHW tensor, and their labels.
inline Tensor rows(const Dataset& d, int64_t first, int64_t count) {
  REQUIRE(first + count <= d.count);
  const auto begin = d.images.begin() + first * d.image_size();
  return Tensor::from({count, d.channels, d.height, d.width},
                      std::vector<float>(begin, begin + count * d.image_size()));
}
inline std::vector<int32_t> labels(const Dataset& d, int64_t first, int64_t count) {
  return {d.labels.begin() + first, d.labels.begin() + first + count};
}

// Forward, mean cross-entropy over the rows, backward (gradients accumulate).
inline double train_pass(Net& net, const Dataset& d, int64_t first, int64_t count) {
  const LossResult loss = softmax_cross_entropy(net.forward(rows(d, first, count)), labels(d, first, count));
  net.backward(loss.grad);
  return loss.loss;
}

// One single-process step on rows [first, first + count): the reference runs.
inline void local_step(Net& net, Optimizer& optimizer, const Dataset& d, int64_t first, int64_t count) {
  optimizer.zero_grad();
  train_pass(net, d, first, count);
  optimizer.step();
}

inline std::unique_ptr<Net> seeded_mnist(uint64_t seed) {
  auto net = mnist_convnet();
  initialize(*net, seed);
  return net;
}

// conv(3→4) → BN → ReLU → conv(4→2) → BN: small enough to check element by element, with
// batch norms (buffers, SyncBN) in it. `wide` gives the first conv 5 channels instead.
inline std::unique_ptr<Net> conv_bn_net(bool wide = false) {
  const int64_t c = wide ? 5 : 4;
  auto net = std::make_unique<Net>();
  net->name = "conv_bn";
  net->add("conv1", std::make_unique<Conv2d>(Conv2dOptions{.in_channels = 3, .out_channels = c, .padding = 1}));
  net->add("bn1", std::make_unique<BatchNorm2d>(BatchNormOptions{.channels = c}));
  net->add("relu", std::make_unique<ReLU>());
  net->add("conv2", std::make_unique<Conv2d>(Conv2dOptions{.in_channels = c, .out_channels = 2, .padding = 1}));
  net->add("bn2", std::make_unique<BatchNorm2d>(BatchNormOptions{.channels = 2}));
  return net;
}

// Every parameter and buffer from a seeded generator (batch-norm scales around 1, running
// variances positive), so that no value is a default that would hide a missed copy.
inline void fill_seeded(Module& net, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  for (Parameter* p : net.parameters())
    for (int64_t i = 0; i < p->value.numel(); ++i)
      p->value[i] = (p->name.find("bn") != std::string::npos && p->name.ends_with("weight") ? 1.0f : 0.0f) + u(rng);
  for (auto& [name, t] : net.buffers())
    for (int64_t i = 0; i < t->numel(); ++i) (*t)[i] = name.ends_with("running_var") ? 1.0f + u(rng) : u(rng);
}

inline Tensor seeded_tensor(std::vector<int64_t> shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  Tensor t(std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t[i] = n(rng);
  return t;
}

// Rows [first, first + count) of the first dimension.
inline Tensor slice_rows(const Tensor& t, int64_t first, int64_t count) {
  std::vector<int64_t> shape = t.shape();
  const int64_t row = t.numel() / shape[0];
  shape[0] = count;
  return Tensor::from(shape, std::vector<float>(t.data() + first * row, t.data() + (first + count) * row));
}

// Checks |got - want| <= abs + rel·|want| for every element and reports the worst one.
inline void require_close(const float* got, const float* want, int64_t n, double rel, double abs,
                          const std::string& what) {
  int64_t worst = -1;
  double worst_excess = 0, max_diff = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double diff = std::fabs(double(got[i]) - double(want[i]));
    max_diff = std::max(max_diff, diff);
    const double excess = diff - (abs + rel * std::fabs(double(want[i])));
    if (!(excess <= worst_excess) || std::isnan(diff)) {
      worst = i;
      worst_excess = std::isnan(diff) ? INFINITY : excess;
    }
  }
  std::ostringstream report;
  report << what << ": " << n << " values, largest difference " << max_diff;
  if (worst >= 0) report << "; worst at [" << worst << "]: got " << got[worst] << ", want " << want[worst];
  INFO(report.str());
  REQUIRE(worst < 0);
}
inline void require_close(const Tensor& got, const Tensor& want, double rel, double abs, const std::string& what) {
  REQUIRE(got.numel() == want.numel());
  require_close(got.data(), want.data(), got.numel(), rel, abs, what);
}

// Every parameter value (or gradient) of two nets of the same layout.
inline void require_close_parameters(Module& got, Module& want, double rel, double abs, bool grads = false) {
  const std::vector<Parameter*> g = got.parameters(), w = want.parameters();
  REQUIRE(g.size() == w.size());
  for (std::size_t i = 0; i < g.size(); ++i)
    require_close(grads ? g[i]->grad : g[i]->value, grads ? w[i]->grad : w[i]->value, rel, abs,
                  (grads ? "gradient of " : "") + g[i]->name);
}

// Sets `to`'s parameter values to `from`'s. A reference that trains beside a distributed
// net starts each step from the net's parameters: through ReLUs and max pooling, rounding
// differences of an ulp (the allreduce's order of addition varies with timing) can flip
// an activation and grow into visible ones within a few steps.
inline void copy_parameter_values(Module& from, Module& to) {
  const std::vector<Parameter*> f = from.parameters(), t = to.parameters();
  REQUIRE(f.size() == t.size());
  for (std::size_t i = 0; i < f.size(); ++i) t[i]->value.copy_from(f[i]->value);
}

// Bit-for-bit equality of every parameter and buffer.
inline void require_identical(Module& got, Module& want) {
  std::vector<std::pair<std::string, Tensor*>> g, w;
  for (Parameter* p : got.parameters()) g.emplace_back(p->name, &p->value);
  for (Parameter* p : want.parameters()) w.emplace_back(p->name, &p->value);
  for (auto& b : got.buffers()) g.push_back(b);
  for (auto& b : want.buffers()) w.push_back(b);
  REQUIRE(g.size() == w.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    INFO(g[i].first);
    REQUIRE(g[i].first == w[i].first);
    REQUIRE(g[i].second->numel() == w[i].second->numel());
    CHECK(std::memcmp(g[i].second->data(), w[i].second->data(), sizeof(float) * g[i].second->numel()) == 0);
  }
}

// kolo::join() with a bound: if another rank never joins, the job stops with a message.
inline void bounded_join() {
  auto joined = std::async(std::launch::async, [] { kolo::join(); });
  if (joined.wait_for(kolo_test::kOpTimeout) != std::future_status::ready) kolo_test::abort_on_timeout("kolo::join()");
  joined.get();  // rethrows a kolo::Error
}

}  // namespace kolo_dist_test
