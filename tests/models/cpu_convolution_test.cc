// The CPU kernels' two convolutions (im2col + Eigen GEMM, and oneDNN where kolo was built
// with it) and the Auto rule that mixes them pass by pass: each against a direct
// convolution in double, forward and all three gradients, on 1 and 2 threads.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <random>
#include <string>

#include "kolo/models.h"
#include "reference_conv.h"
#include "support/status.h"

using namespace kolo::models;

namespace {

struct Shape {
  const char* what;
  int64_t batch, channels, height, width, out_channels, kernel, stride, padding;
  bool bias;
};

// The shapes the Auto rule treats differently, and the awkward ones: an odd batch (uneven
// slices across threads), one input channel, non-square maps, a 1×1 map.
const Shape kShapes[] = {
    {"1 input channel, 5x5, bias (MNIST conv1)", 3, 1, 12, 12, 4, 5, 1, 0, true},
    {"3 channels, strided, padded, non-square", 3, 3, 9, 7, 4, 3, 2, 1, true},
    {"16 channels on 4x4 (both gradients on oneDNN)", 5, 16, 4, 4, 8, 3, 1, 1, true},
    {"16 channels on 2x2 (weight gradient on im2col, input gradient on oneDNN)", 5, 16, 2, 2, 8, 3, 1, 1, true},
    {"pointwise, stride 2", 3, 8, 6, 6, 16, 1, 2, 0, false},
    {"1x1 map: taps that read only padding", 3, 8, 1, 1, 8, 3, 1, 1, false},
    {"a batch of 1 (fewer images than threads)", 1, 8, 6, 6, 8, 3, 1, 1, true},
    {"2x2 map to 1x1 output pixel, 4 of 9 taps live", 3, 8, 2, 2, 8, 3, 2, 1, true},
};

Tensor random_tensor(std::vector<int64_t> shape, std::mt19937_64& rng) {
  Tensor t(std::move(shape));
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int64_t i = 0; i < t.numel(); ++i) t[i] = static_cast<float>(u(rng));
  return t;
}

void require_close(const Tensor& got, const std::vector<double>& expected, const char* what) {
  INFO(what);
  REQUIRE(static_cast<std::size_t>(got.numel()) == expected.size());
  for (int64_t i = 0; i < got.numel(); ++i) REQUIRE(got[i] == Approx(expected[static_cast<std::size_t>(i)]).margin(1e-4));
}

// Restores the default mode and one thread whatever the test does.
struct Restore {
  ~Restore() {
    set_cpu_convolution(CpuConvolution::Auto);
    set_num_threads(1);
  }
};

}  // namespace

TEST_CASE("every CPU convolution path matches a direct convolution: forward and all gradients", "[conv][threads]") {
  Restore restore;
  std::vector<std::pair<CpuConvolution, std::string>> modes = {{CpuConvolution::Im2col, "im2col"},
                                                                {CpuConvolution::Auto, "auto"}};
  if (has_onednn()) modes.emplace_back(CpuConvolution::OneDnn, "onednn");
  for (const auto& [mode, mode_name] : modes)
    for (int threads : {1, 2})
      for (const Shape& s : kShapes)
        for (bool input_gradient : {true, false}) {
          INFO(mode_name << ", " << threads << " threads, " << s.what
                         << (input_gradient ? "" : ", no input gradient (a first layer)"));
          set_cpu_convolution(mode);
          set_num_threads(threads);
          std::mt19937_64 rng(5);
          Conv2d conv({.in_channels = s.channels, .out_channels = s.out_channels, .kernel = s.kernel, .stride = s.stride,
                       .padding = s.padding, .bias = s.bias});
          conv.set_needs_input_grad(input_gradient);
          conv.weight().value.copy_from(random_tensor(conv.weight().value.shape(), rng));
          Tensor bias({s.out_channels});
          if (s.bias) conv.bias()->value.copy_from(bias = random_tensor({s.out_channels}, rng));
          const Tensor x = random_tensor({s.batch, s.channels, s.height, s.width}, rng);
          const Tensor y = conv.forward(x.clone()).clone();
          const Tensor dy = random_tensor(y.shape(), rng);
          const reference::Convolution want =
              reference::convolution({s.batch, s.channels, s.height, s.width, s.out_channels, s.kernel, s.stride,
                                      s.padding},
                                     x, conv.weight().value, s.bias ? bias.data() : nullptr, dy);
          require_close(y, want.y, "y");
          // Two steps, to check that gradients accumulate (and that cached primitives are reused).
          conv.zero_grad();
          conv.backward(dy);
          conv.forward(x.clone());
          const Tensor dx = conv.backward(dy);
          if (input_gradient) require_close(dx, want.dx, "dx");
          std::vector<double> twice = want.dw;
          for (double& v : twice) v *= 2;
          require_close(conv.weight().grad, twice, "dw (two backward passes)");
          if (s.bias) {
            twice = want.db;
            for (double& v : twice) v *= 2;
            require_close(conv.bias()->grad, twice, "db (two backward passes)");
          }
        }
}

TEST_CASE("asking for oneDNN convolutions in a build without oneDNN is a clear error", "[conv]") {
  Restore restore;
  if (has_onednn()) {
    set_cpu_convolution(CpuConvolution::OneDnn);
    CHECK(cpu_convolution() == CpuConvolution::OneDnn);
    return;
  }
  REQUIRE_THROWS_MATCHES(set_cpu_convolution(CpuConvolution::OneDnn), kolo::Error,
                         kolo_test::HasCode(kolo::StatusCode::Unsupported, "without oneDNN"));
  CHECK(cpu_convolution() == CpuConvolution::Auto);
}

namespace {
int process_threads() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  return -1;
}
}  // namespace

// oneDNN's OpenMP build would start a team of its own from every calling thread, beside
// kolo's pool: kolo keeps it to the thread that calls it.
TEST_CASE("oneDNN convolutions run on kolo's threads only, starting none of their own", "[conv][threads]") {
  Restore restore;
  if (!has_onednn()) return;
  set_cpu_convolution(CpuConvolution::OneDnn);
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    const int before = process_threads();
    REQUIRE(before > 0);
    Conv2d conv({.in_channels = 16, .out_channels = 16, .kernel = 3, .padding = 1});
    conv.set_needs_input_grad(true);
    Tensor x({4, 16, 12, 12});
    for (int64_t i = 0; i < x.numel(); ++i) x[i] = float(i % 9) * 0.1f;
    const Tensor y = conv.forward(x);
    conv.backward(y);
    CHECK(process_threads() == before);
  }
}
