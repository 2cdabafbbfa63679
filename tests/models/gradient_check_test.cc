// Layer-by-layer gradient checks: each layer's backward against central finite
// differences of L = Σ wᵢ·yᵢ (a fixed random functional of the output), for the input
// and for every parameter. Whole nets are checked against PyTorch instead (kolo-parity):
// through dozens of ReLUs and poolings, float32 finite differences are too coarse.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "kolo/models.h"

using namespace kolo::models;

namespace {

Tensor random_tensor(std::vector<int64_t> shape, std::mt19937_64& rng, double scale = 1.0) {
  Tensor t(std::move(shape));
  std::normal_distribution<double> n(0.0, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t[i] = static_cast<float>(n(rng));
  return t;
}

double functional(const Tensor& y, const Tensor& w) {
  double sum = 0;
  for (int64_t i = 0; i < y.numel(); ++i) sum += double(y[i]) * double(w[i]);
  return sum;
}

// Relative L2 distance between the analytic and the numeric gradient of `value`.
double gradient_error(Module& m, const Tensor& input, Tensor& value, const Tensor& analytic, const Tensor& w,
                      double h) {
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < value.numel(); ++i) {
    const float saved = value[i];
    // A clone per pass: ReLU works in place on its input.
    value[i] = saved + float(h);
    const double plus = functional(m.forward(input.clone()), w);
    value[i] = saved - float(h);
    const double minus = functional(m.forward(input.clone()), w);
    value[i] = saved;
    const double numeric = (plus - minus) / (2 * h);
    diff += (numeric - analytic[i]) * (numeric - analytic[i]);
    norm += numeric * numeric;
  }
  return std::sqrt(diff / std::max(norm, 1e-30));
}

void check_gradients(Module& m, Tensor input, double h = 1e-2, double tolerance = 1e-2) {
  std::mt19937_64 rng(7);
  m.train();
  m.set_needs_input_grad(true);
  m.zero_grad();
  const Tensor y = m.forward(input.clone());
  const Tensor w = random_tensor(y.shape(), rng);
  const Tensor dx = m.backward(w).clone();
  std::vector<Tensor> grads;
  for (Parameter* p : m.parameters()) grads.push_back(p->grad.clone());
  // Forward passes in train mode also update BN running statistics; they do not affect
  // the training-mode output, so finite differences stay valid.
  CHECK(gradient_error(m, input, input, dx, w, h) < tolerance);
  std::size_t k = 0;
  for (Parameter* p : m.parameters()) {
    INFO("parameter " << p->name);
    CHECK(gradient_error(m, input, p->value, grads[k++], w, h) < tolerance);
  }
}

}  // namespace

TEST_CASE("Conv2d backward matches finite differences (stride, padding, bias)", "[gradcheck]") {
  std::mt19937_64 rng(1);
  Conv2d conv({.in_channels = 3, .out_channels = 4, .kernel = 3, .stride = 2, .padding = 1, .bias = true});
  conv.weight().value.copy_from(random_tensor(conv.weight().value.shape(), rng, 0.3));
  conv.bias()->value.copy_from(random_tensor({4}, rng, 0.3));
  check_gradients(conv, random_tensor({2, 3, 7, 6}, rng));
  Conv2d pointwise({.in_channels = 5, .out_channels = 3, .kernel = 1, .bias = false});
  pointwise.weight().value.copy_from(random_tensor(pointwise.weight().value.shape(), rng, 0.3));
  check_gradients(pointwise, random_tensor({1, 5, 4, 4}, rng));
}

// Direct convolution in double: y[n][k][p][q] = b[k] + Σ w[k][c][r][s]·x[n][c][ih][iw].
std::vector<double> direct_conv(const Tensor& x, const Tensor& w, const Tensor& b, int64_t stride, int64_t pad) {
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t K = w.shape()[0], R = w.shape()[2];
  const int64_t P = (H + 2 * pad - R) / stride + 1, Q = (W + 2 * pad - R) / stride + 1;
  std::vector<double> y(static_cast<std::size_t>(N * K * P * Q));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t p = 0; p < P; ++p)
        for (int64_t q = 0; q < Q; ++q) {
          double sum = b[k];
          for (int64_t c = 0; c < C; ++c)
            for (int64_t r = 0; r < R; ++r)
              for (int64_t t = 0; t < R; ++t) {
                const int64_t ih = p * stride - pad + r, iw = q * stride - pad + t;
                if (ih >= 0 && ih < H && iw >= 0 && iw < W)
                  sum += double(w[((k * C + c) * R + r) * R + t]) * double(x[((n * C + c) * H + ih) * W + iw]);
              }
          y[static_cast<std::size_t>(((n * K + k) * P + p) * Q + q)] = sum;
        }
  return y;
}

// Maps smaller than the kernel leave some taps reading only padding (a 3×3 convolution on
// a 1×1 map uses only its centre): the CPU kernels leave those taps out of their GEMMs, and the
// forward, the input gradient and every weight's gradient (zero for the dead taps) must
// not notice.
TEST_CASE("Conv2d on maps smaller than its kernel matches a direct convolution and finite differences",
          "[gradcheck]") {
  struct Case {
    int64_t size, kernel, stride, padding;
  };
  for (const Case c : {Case{1, 3, 1, 1}, Case{2, 3, 2, 1}, Case{1, 5, 1, 2}, Case{2, 5, 2, 2}}) {
    INFO("map " << c.size << " kernel " << c.kernel << " stride " << c.stride << " padding " << c.padding);
    std::mt19937_64 rng(3);
    Conv2d conv({.in_channels = 3, .out_channels = 4, .kernel = c.kernel, .stride = c.stride, .padding = c.padding,
                 .bias = true});
    conv.weight().value.copy_from(random_tensor(conv.weight().value.shape(), rng, 0.3));
    conv.bias()->value.copy_from(random_tensor({4}, rng, 0.3));
    const Tensor x = random_tensor({3, 3, c.size, c.size}, rng);
    const Tensor y = conv.forward(x.clone());
    const std::vector<double> expected = direct_conv(x, conv.weight().value, conv.bias()->value, c.stride, c.padding);
    REQUIRE(static_cast<std::size_t>(y.numel()) == expected.size());
    for (int64_t i = 0; i < y.numel(); ++i) REQUIRE(y[i] == Approx(expected[i]).margin(1e-5));
    check_gradients(conv, x);
  }
}

TEST_CASE("BatchNorm2d training-mode backward matches finite differences", "[gradcheck]") {
  std::mt19937_64 rng(2);
  BatchNorm2d bn({.channels = 3});
  bn.weight().value.copy_from(random_tensor({3}, rng));
  bn.bias().value.copy_from(random_tensor({3}, rng));
  check_gradients(bn, random_tensor({4, 3, 3, 2}, rng, 2.0), 1e-2, 2e-2);
}

TEST_CASE("Linear, pooling, padding and ReLU backward match finite differences", "[gradcheck]") {
  std::mt19937_64 rng(3);
  Linear fc(6, 4);
  fc.weight().value.copy_from(random_tensor({4, 6}, rng, 0.5));
  fc.bias()->value.copy_from(random_tensor({4}, rng, 0.5));
  check_gradients(fc, random_tensor({3, 6}, rng));
  MaxPool2d pool({.kernel = 3, .stride = 2, .padding = 1});
  check_gradients(pool, random_tensor({2, 2, 5, 5}, rng), 1e-3);
  MaxPool2d pool2({.kernel = 2, .stride = 2});
  check_gradients(pool2, random_tensor({1, 2, 4, 6}, rng), 1e-3);
  GlobalAvgPool gap;
  check_gradients(gap, random_tensor({2, 3, 3, 4}, rng));
  ZeroPad2d pad(2);
  check_gradients(pad, random_tensor({1, 2, 3, 3}, rng));
  ReLU relu;
  Tensor x = random_tensor({2, 8}, rng);
  for (int64_t i = 0; i < x.numel(); ++i) x[i] += x[i] > 0 ? 0.1f : -0.1f;  // away from the kink
  check_gradients(relu, x);
}

TEST_CASE("softmax cross-entropy gradient matches finite differences", "[gradcheck]") {
  std::mt19937_64 rng(5);
  Tensor logits = random_tensor({4, 5}, rng);
  const std::vector<int32_t> labels = {0, 3, 4, 1};
  const LossResult r = softmax_cross_entropy(logits, labels);
  for (int64_t i = 0; i < logits.numel(); ++i) {
    const float saved = logits[i];
    logits[i] = saved + 1e-2f;
    const double plus = softmax_cross_entropy(logits, labels).loss;
    logits[i] = saved - 1e-2f;
    const double minus = softmax_cross_entropy(logits, labels).loss;
    logits[i] = saved;
    CHECK((plus - minus) / 2e-2 == Approx(r.grad[i]).margin(1e-4));
  }
  CHECK_THROWS_AS(softmax_cross_entropy(logits, {0, 3, 5, 1}), kolo::Error);
  CHECK(accuracy(Tensor::from({2, 2}, {1, 2, 3, 0}), {1, 0}) == 1.0);
}
