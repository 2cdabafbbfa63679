// The GPU's convolutions and linear layers in the precisions only a GPU has (TF32,
// float16, bfloat16; channels-last casts) against the CPU's float32 kernels. Strict
// float32, and every other Kernels method, is kernels_conformance_*_test.cc's (one test
// body for every implementation).
#include <catch2/catch.hpp>

#include "gpu_test_util.h"
#include "models/kernels.h"

using namespace kolo::models;
using namespace kolo::models::gpu_test;

namespace {

float* on(Tensor& t) { return t.data(); }

struct ConvCase {
  ConvShape shape;
  bool bias;
};

// Forward and backward of one convolution on the CPU and the GPU; returns the worst relative
// error over y, dx, dw (accumulated onto a non-zero start) and db.
double conv_error(const ConvShape& s, bool bias, uint64_t seed) {
  const Tensor x = random_tensor({s.batch, s.in_channels, s.height, s.width}, seed);
  const Tensor w = random_tensor({s.out_channels, s.in_channels, s.kernel, s.kernel}, seed + 1, 0.2);
  const Tensor b = random_tensor({s.out_channels}, seed + 2);
  const Tensor dy = random_tensor({s.batch, s.out_channels, s.out_height(), s.out_width()}, seed + 3);
  const Tensor dw0 = random_tensor(w.shape(), seed + 4), db0 = random_tensor(b.shape(), seed + 5);

  Tensor y(dy.shape()), dx(x.shape()), dw = dw0.clone(), db = db0.clone();
  cpu_kernels().conv2d_forward(s, x.data(), w.data(), bias ? b.data() : nullptr, y.data());
  cpu_kernels().conv2d_backward(s, x.data(), w.data(), dy.data(), dx.data(), dw.data(), bias ? db.data() : nullptr);

  Tensor gx = x.to(kGpu), gw = w.to(kGpu), gb = b.to(kGpu), gdy = dy.to(kGpu);
  Tensor gy(dy.shape(), kGpu), gdx(x.shape(), kGpu), gdw = dw0.to(kGpu), gdb = db0.to(kGpu);
  Kernels& gpu = kernels(kGpu);
  gpu.conv2d_forward(s, on(gx), on(gw), bias ? on(gb) : nullptr, on(gy));
  gpu.conv2d_backward(s, on(gx), on(gw), on(gdy), on(gdx), on(gdw), bias ? on(gdb) : nullptr);

  double worst = std::max({rel_l2(gy, y), rel_l2(gdx, dx), rel_l2(gdw, dw)});
  if (bias) worst = std::max(worst, rel_l2(gdb, db));
  return worst;
}

}  // namespace

TEST_CASE("GPU convolution with TF32 and in float16/bfloat16 stays close to the CPU", "[gpu][conv]") {
  const ConvShape s{2, 16, 12, 12, 32, 3, 1, 1};
  set_allow_tf32(kGpu, true);
  CHECK(conv_error(s, true, 1) < 5e-3);  // TF32: 10-bit mantissa products
  set_compute_precision(kGpu, kolo::DType::Float16);
  CHECK(conv_error(s, true, 2) < 5e-3);
  set_compute_precision(kGpu, kolo::DType::BFloat16);
  CHECK(conv_error(s, true, 3) < 3e-2);
  set_compute_precision(kGpu, kolo::DType::Float32);
}

TEST_CASE("GPU float16/bfloat16 convolutions in channels-last match the CPU as in NCHW", "[gpu][conv][channels-last]") {
  // Channels multiples of 8 (what cuDNN's NHWC tensor-core kernels want), odd and strided
  // planes, 1×1 and 3×3; dw accumulates onto a non-zero start through the transposing cast.
  const std::vector<ConvCase> cases = {{{2, 16, 12, 12, 32, 3, 1, 1}, true},
                                       {{2, 8, 17, 15, 16, 3, 1, 1}, false},
                                       {{2, 8, 16, 16, 16, 3, 2, 1}, true},
                                       {{3, 16, 9, 9, 32, 1, 1, 0}, false},
                                       {{2, 16, 9, 9, 32, 1, 2, 0}, true}};
  struct Precision {
    kolo::DType dtype;
    double bound;
  };
  for (const Precision p : {Precision{kolo::DType::Float16, 5e-3}, Precision{kolo::DType::BFloat16, 3e-2}}) {
    set_compute_precision(kGpu, p.dtype);
    for (const ChannelsLast mode : {ChannelsLast::Always, ChannelsLast::Never, ChannelsLast::Auto}) {
      set_channels_last(kGpu, mode);
      uint64_t seed = 100;
      for (const ConvCase& c : cases) {
        INFO(kolo::dtype_name(p.dtype) << " mode " << int(mode) << " conv x[" << c.shape.batch << ","
                                       << c.shape.in_channels << "," << c.shape.height << "," << c.shape.width
                                       << "] k" << c.shape.kernel << " s" << c.shape.stride);
        CHECK(conv_error(c.shape, c.bias, seed += 10) < p.bound);
      }
    }
  }
  set_channels_last(kGpu, ChannelsLast::Auto);
  set_compute_precision(kGpu, kolo::DType::Float32);
}

TEST_CASE("GPU linear layer in float16 stays close to the CPU", "[gpu][linear]") {
  const int64_t rows = 7, in = 33, out = 10;
  const Tensor x = random_tensor({rows, in}, 1), w = random_tensor({out, in}, 2), b = random_tensor({out}, 3);
  const Tensor dy = random_tensor({rows, out}, 4), dw0 = random_tensor({out, in}, 5), db0 = random_tensor({out}, 6);
  Tensor y({rows, out}), dx({rows, in}), dw = dw0.clone(), db = db0.clone();
  cpu_kernels().linear_forward(rows, in, out, x.data(), w.data(), b.data(), y.data());
  cpu_kernels().linear_backward(rows, in, out, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data());

  set_compute_precision(kGpu, kolo::DType::Float16);
  Tensor gx = x.to(kGpu), gw = w.to(kGpu), gb = b.to(kGpu), gdy = dy.to(kGpu);
  Tensor gy({rows, out}, kGpu), gdx({rows, in}, kGpu), gdw = dw0.to(kGpu), gdb = db0.to(kGpu);
  kernels(kGpu).linear_forward(rows, in, out, on(gx), on(gw), on(gb), on(gy));
  kernels(kGpu).linear_backward(rows, in, out, on(gx), on(gw), on(gdy), on(gdx), on(gdw), on(gdb));
  CHECK(rel_l2(gy, y) < 2e-3);  // float16 operands (11-bit mantissas), float32 accumulation
  CHECK(rel_l2(gdx, dx) < 2e-3);
  CHECK(rel_l2(gdw, dw) < 2e-3);
  CHECK(rel_l2(gdb, db) < 1e-6);  // summed from float32 dy either way
  set_compute_precision(kGpu, kolo::DType::Float32);
}
