#include <catch2/catch.hpp>

#include "kolo/models.h"

using namespace kolo::models;

// Regression: a worker that started after the first parallel loop had begun waited for
// the next one forever. Resizing and using the pool at once, many times, hit it.
TEST_CASE("kernels give the same result with 1 and 2 threads, right after resizing", "[threads]") {
  Conv2d conv({.in_channels = 2, .out_channels = 3, .kernel = 3, .padding = 1});
  for (int64_t i = 0; i < conv.weight().value.numel(); ++i) conv.weight().value[i] = float(i % 7) - 3.0f;
  Tensor x({4, 2, 6, 6});
  for (int64_t i = 0; i < x.numel(); ++i) x[i] = float(i % 5) - 2.0f;
  set_num_threads(1);
  const Tensor expected = conv.forward(x).clone();
  for (int round = 0; round < 200; ++round) {
    set_num_threads(2);
    const Tensor y = conv.forward(x);
    bool same = true;
    for (int64_t i = 0; i < y.numel(); ++i) same = same && y[i] == expected[i];
    REQUIRE(same);
  }
  CHECK(num_threads() == 2);
  set_num_threads(1);
}
