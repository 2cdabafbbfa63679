// Kernels conformance (kernels_conformance.h): softmax_cross_entropy and count_correct on
// every implementation.
//
// Bounds. The loss is a double computation on both sides (max, log-sum-exp, mean): 1e-12
// for summation order. Each gradient element is a double rounded once to float, then the
// label's gets 1/rows taken off in float: 1e-7 against the double reference; a GPU follows
// the CPU's formula step by step: 1e-7. Counts are integers: exact.
#include <limits>

#include "kernels_conformance.h"

using namespace kolo::models;
using namespace kolo::models::conformance;
using kolo::Device;

namespace {

struct LossCase {
  const char* what;
  Tensor logits;
  std::vector<int32_t> labels;
};

std::vector<LossCase> loss_cases() {
  std::vector<LossCase> cases;
  cases.push_back({"9 rows of 1000 classes", random_tensor({9, 1000}, 1, 3.0), {0, 999, 5, 17, 500, 3, 3, 998, 1}});
  // Logits far beyond exp's float (and double) range: only the max-shifted form survives.
  Tensor large = random_tensor({4, 10}, 2, 3000.0);
  large[3] = 1e30f;
  large[15] = -1e30f;
  for (int64_t k = 20; k < 30; ++k) large[k] = 88.5f;  // a row of equal, large logits
  cases.push_back({"large logits", large, {3, 0, 7, 9}});
  cases.push_back({"no rows", Tensor({0, 10}), {}});
  return cases;
}

}  // namespace

TEST_CASE("softmax_cross_entropy: the mean loss, and (softmax - onehot) / rows, even for huge logits",
          "[kernels][loss]") {
  const Device device = GENERATE(kernel_devices());
  if (!present(device)) return;
  for (const LossCase& c : loss_cases()) {
    INFO(c.what);
    const int64_t rows = c.logits.dim(0), classes = c.logits.dim(1);
    const auto run = [&](Device d) {
      Tensor grad = Tensor::full(c.logits.shape(), 7.0f, d);
      const Tensor logits = c.logits.to(d);
      const double loss = kernels(d).softmax_cross_entropy(rows, classes, logits.data(), c.labels.data(), grad.data());
      return Outputs{{"loss", {loss}}, {"grad", values(grad)}};
    };
    double total = 0;
    std::vector<double> grad(static_cast<std::size_t>(rows * classes));
    for (int64_t r = 0; r < rows; ++r) {
      const float* z = c.logits.data() + r * classes;
      double max = -std::numeric_limits<double>::infinity(), sum = 0;
      for (int64_t k = 0; k < classes; ++k) max = std::max(max, double(z[k]));
      for (int64_t k = 0; k < classes; ++k) sum += std::exp(double(z[k]) - max);
      const int32_t label = c.labels[static_cast<std::size_t>(r)];
      total += max + std::log(sum) - z[label];
      for (int64_t k = 0; k < classes; ++k)
        grad[static_cast<std::size_t>(r * classes + k)] =
            (std::exp(double(z[k]) - max) / sum - (k == label ? 1.0 : 0.0)) / double(rows);
    }
    conform(device, run, {{"loss", {rows > 0 ? total / double(rows) : 0.0}, {1e-12, 1e-12}}, {"grad", grad, {1e-7, 1e-7}}});
  }
}

TEST_CASE("count_correct: rows whose first maximum is at the label", "[kernels][loss]") {
  const Device device = GENERATE(kernel_devices());
  if (!present(device)) return;
  const int64_t rows = 64, classes = 10;
  const Tensor logits = integer_tensor({rows, classes}, 2, 3);  // ties everywhere: the first maximum decides
  std::vector<int32_t> labels(rows);
  for (int64_t i = 0; i < rows; ++i) labels[static_cast<std::size_t>(i)] = static_cast<int32_t>(i % classes);
  const auto run = [&](Device d) {
    const Tensor z = logits.to(d);
    return Outputs{{"correct", {double(kernels(d).count_correct(rows, classes, z.data(), labels.data()))}}};
  };
  int64_t correct = 0;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t best = 0;
    for (int64_t k = 1; k < classes; ++k)
      if (logits[r * classes + k] > logits[r * classes + best]) best = k;
    correct += best == labels[static_cast<std::size_t>(r)];
  }
  REQUIRE(correct > 0);
  conform(device, run, {{"correct", {double(correct)}, {0, 0}}});
}
