// Kernels conformance (kernels_conformance.h): conv2d_forward/backward and
// linear_forward/backward on every implementation. The CPU against a direct double
// convolution and double matrix products; a GPU (strict float32: no TF32) against the CPU.
//
// Bounds. Against the reference: float32 products summed in float32 (y over C·R·S ≤ 147
// terms, dw and db over N·P·Q ≤ 2304, linear layers over 33 or 7) differ from the double
// sums by ~1e-7 relative: 1e-5 (convolutions) and 1e-6 (linear) leave room for the
// summation orders of im2col, oneDNN and Eigen. GPU against CPU: cuDNN and cuBLAS pick
// other algorithms, so other summation orders: the same bounds.
#include "kernels_conformance.h"
#include "reference_conv.h"

using namespace kolo::models;
using namespace kolo::models::conformance;
using kolo::Device;

namespace {

struct ConvCase {
  ConvShape shape;
  bool bias;
};

const std::vector<ConvCase> kConvCases = {
    {{2, 3, 17, 15, 8, 3, 1, 1}, true},    // 3×3, odd sizes
    {{2, 8, 16, 16, 16, 3, 2, 1}, false},  // strided (ResNet's downsampling 3×3)
    {{3, 16, 9, 9, 32, 1, 1, 0}, false},   // 1×1 (bottleneck)
    {{2, 16, 9, 9, 32, 1, 2, 0}, true},    // 1×1 stride 2 (projection shortcut)
    {{2, 3, 32, 32, 8, 7, 2, 3}, false},   // the ResNet stem
    {{4, 1, 28, 28, 6, 5, 1, 0}, true},    // the MNIST net's first layer
    {{3, 8, 1, 1, 8, 3, 1, 1}, true},      // a 1×1 map: taps that read only padding
};

std::vector<double> plus(std::vector<double> a, const Tensor& b) {
  for (std::size_t i = 0; i < a.size(); ++i) a[i] += double(b[static_cast<int64_t>(i)]);
  return a;
}

}  // namespace

TEST_CASE("conv2d_forward and conv2d_backward: y, dx, and dw and db added to what they hold", "[kernels][conv]") {
  const Device device = GENERATE(kernel_devices());
  if (!present(device)) return;
  StrictFloat32 strict(device);
  uint64_t seed = 10;
  for (const ConvCase& c : kConvCases) {
    const ConvShape& s = c.shape;
    INFO("conv x[" << s.batch << "," << s.in_channels << "," << s.height << "," << s.width << "] k" << s.kernel
                   << " s" << s.stride << " p" << s.padding << (c.bias ? " with bias" : ""));
    const Tensor x = random_tensor({s.batch, s.in_channels, s.height, s.width}, seed += 10);
    const Tensor w = random_tensor({s.out_channels, s.in_channels, s.kernel, s.kernel}, seed + 1, 0.2);
    const Tensor b = random_tensor({s.out_channels}, seed + 2);
    const Tensor dy = random_tensor({s.batch, s.out_channels, s.out_height(), s.out_width()}, seed + 3);
    const Tensor dw0 = random_tensor(w.shape(), seed + 4), db0 = random_tensor(b.shape(), seed + 5);
    const auto run = [&](Device d) {
      Tensor dx = Tensor::uninitialized(x.shape(), d), dw = copy_to(dw0, d), db = copy_to(db0, d);
      Tensor dw_alone = copy_to(dw0, d), y = Tensor::uninitialized(dy.shape(), d);
      const Tensor xd = x.to(d), wd = w.to(d), bd = b.to(d), dyd = dy.to(d);
      Kernels& k = kernels(d);
      k.conv2d_forward(s, xd.data(), wd.data(), c.bias ? bd.data() : nullptr, y.data());
      k.conv2d_backward(s, xd.data(), wd.data(), dyd.data(), dx.data(), dw.data(), c.bias ? db.data() : nullptr);
      // No input gradient (a net's first layer): the weight gradient alone, the same.
      k.conv2d_backward(s, xd.data(), wd.data(), dyd.data(), nullptr, dw_alone.data(), nullptr);
      Outputs out{{"y", values(y)}, {"dx", values(dx)}, {"dw", values(dw)}, {"dw without dx", values(dw_alone)}};
      if (c.bias) out["db"] = values(db);
      return out;
    };
    const reference::Convolution want = reference::convolution(s, x, w, c.bias ? b.data() : nullptr, dy);
    std::vector<Expected> expected = {{"y", want.y, {1e-5, 1e-5}},
                                      {"dx", want.dx, {1e-5, 1e-5}},
                                      {"dw", plus(want.dw, dw0), {1e-5, 1e-5}},
                                      {"dw without dx", plus(want.dw, dw0), {1e-5, 1e-5}}};
    if (c.bias) expected.push_back({"db", plus(want.db, db0), {1e-5, 1e-5}});
    conform(device, run, expected);
  }
}

TEST_CASE("linear_forward and linear_backward: y = x·wᵀ + b, dx = dy·w, dw += dyᵀ·x, db += Σdy",
          "[kernels][linear]") {
  const Device device = GENERATE(kernel_devices());
  if (!present(device)) return;
  StrictFloat32 strict(device);
  const int64_t rows = 7, in = 33, out = 10;
  const Tensor x = random_tensor({rows, in}, 1), w = random_tensor({out, in}, 2), b = random_tensor({out}, 3);
  const Tensor dy = random_tensor({rows, out}, 4), dw0 = random_tensor({out, in}, 5), db0 = random_tensor({out}, 6);
  for (const bool optional_parts : {true, false}) {
    INFO((optional_parts ? "with bias and input gradient" : "no bias, no input gradient"));
    const auto run = [&](Device d) {
      Tensor y = Tensor::uninitialized({rows, out}, d), dx = Tensor::uninitialized({rows, in}, d);
      Tensor dw = copy_to(dw0, d), db = copy_to(db0, d);
      const Tensor xd = x.to(d), wd = w.to(d), bd = b.to(d), dyd = dy.to(d);
      kernels(d).linear_forward(rows, in, out, xd.data(), wd.data(), optional_parts ? bd.data() : nullptr, y.data());
      kernels(d).linear_backward(rows, in, out, xd.data(), wd.data(), dyd.data(), optional_parts ? dx.data() : nullptr,
                                 dw.data(), optional_parts ? db.data() : nullptr);
      Outputs o{{"y", values(y)}, {"dw", values(dw)}};
      if (optional_parts) {
        o["dx"] = values(dx);
        o["db"] = values(db);
      }
      return o;
    };
    std::vector<double> y(static_cast<std::size_t>(rows * out)), dx(static_cast<std::size_t>(rows * in));
    std::vector<double> dw = values(dw0), db = values(db0);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t o = 0; o < out; ++o) {
        double sum = optional_parts ? double(b[o]) : 0.0;
        const double g = dy[r * out + o];
        db[static_cast<std::size_t>(o)] += g;
        for (int64_t i = 0; i < in; ++i) {
          sum += double(x[r * in + i]) * double(w[o * in + i]);
          dx[static_cast<std::size_t>(r * in + i)] += g * double(w[o * in + i]);
          dw[static_cast<std::size_t>(o * in + i)] += g * double(x[r * in + i]);
        }
        y[static_cast<std::size_t>(r * out + o)] = sum;
      }
    std::vector<Expected> expected = {{"y", y, {1e-6, 1e-6}}, {"dw", dw, {1e-6, 1e-6}}};
    if (optional_parts) {
      expected.push_back({"dx", dx, {1e-6, 1e-6}});
      expected.push_back({"db", db, {1e-6, 1e-6}});
    }
    conform(device, run, expected);
  }
}
