// Max pooling against a plain scan with PyTorch's rule, on inputs full of ties, NaNs and
// -inf: each window's value and the input its gradient goes to (the chosen maximum).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>

#include "kolo/models.h"

using namespace kolo::models;

namespace {

struct Chosen {
  float value;
  int64_t index;  // within the plane
};

// PyTorch's scan: the window's inputs in row-major order, strictly greater wins, NaN wins.
Chosen scan_window(const float* plane, int64_t height, int64_t width, int64_t h0, int64_t w0, int64_t kernel) {
  Chosen best{-std::numeric_limits<float>::infinity(), -1};
  for (int64_t r = 0; r < kernel; ++r)
    for (int64_t k = 0; k < kernel; ++k) {
      const int64_t ih = h0 + r, iw = w0 + k;
      if (ih < 0 || ih >= height || iw < 0 || iw >= width) continue;
      const float v = plane[ih * width + iw];
      if (best.index < 0 || v > best.value || std::isnan(v)) best = {v, ih * width + iw};
    }
  return best;
}

}  // namespace

TEST_CASE("MaxPool2d keeps the first maximum of each window, NaN wins, as PyTorch", "[pooling]") {
  struct Case {
    int64_t size, kernel, stride, padding;
  };
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (const Case c : {Case{16, 3, 2, 1}, Case{7, 3, 2, 1}, Case{9, 3, 1, 1}, Case{8, 2, 2, 0}, Case{11, 5, 3, 2}}) {
    INFO("map " << c.size << " kernel " << c.kernel << " stride " << c.stride << " padding " << c.padding);
    std::mt19937 rng(5);
    std::uniform_int_distribution<int> pick(0, 9);
    const int64_t planes = 6;
    Tensor x({2, 3, c.size, c.size});
    // Mostly small integers (ties everywhere), some NaN and -inf; the last plane all -inf.
    for (int64_t i = 0; i < x.numel(); ++i) {
      const int v = pick(rng);
      x[i] = v == 0 ? nan : v == 1 ? -inf : float(v % 3);
    }
    for (int64_t i = (planes - 1) * c.size * c.size; i < x.numel(); ++i) x[i] = -inf;

    MaxPool2d pool({.kernel = c.kernel, .stride = c.stride, .padding = c.padding});
    pool.train();
    const Tensor y = pool.forward(x);
    // The gradient of output j is 1 + j: the input it lands on identifies the chosen one.
    Tensor dy(y.shape());
    for (int64_t j = 0; j < dy.numel(); ++j) dy[j] = float(1 + j % 1000);
    const Tensor dx = pool.backward(dy);

    const int64_t out = y.shape()[2], plane_size = c.size * c.size;
    REQUIRE(y.shape()[3] == out);
    std::vector<double> expected_dx(static_cast<std::size_t>(x.numel()), 0.0);
    for (int64_t plane = 0; plane < planes; ++plane)
      for (int64_t p = 0; p < out; ++p)
        for (int64_t q = 0; q < out; ++q) {
          const Chosen want = scan_window(&x[plane * plane_size], c.size, c.size, p * c.stride - c.padding,
                                          q * c.stride - c.padding, c.kernel);
          const int64_t j = (plane * out + p) * out + q;
          if (std::isnan(want.value))
            REQUIRE(std::isnan(y[j]));
          else
            REQUIRE(y[j] == want.value);
          expected_dx[static_cast<std::size_t>(plane * plane_size + want.index)] += dy[j];
        }
    for (int64_t i = 0; i < dx.numel(); ++i) REQUIRE(dx[i] == expected_dx[static_cast<std::size_t>(i)]);
  }
}
