// Each CUDA backend call against the CPU backend on random inputs (models/backend.h).
#include <catch2/catch.hpp>

#include "gpu_test_util.h"
#include "models/backend.h"

using namespace kolo::models;
using namespace kolo::models::gpu_test;

namespace {

float* on(Tensor& t) { return t.data(); }
int32_t* indices(Tensor& t) { return reinterpret_cast<int32_t*>(t.data()); }

struct ConvCase {
  ConvShape shape;
  bool bias;
};

// Forward and backward of one convolution on both backends; returns the worst relative
// error over y, dx, dw (accumulated onto a non-zero start) and db.
double conv_error(const ConvShape& s, bool bias, uint64_t seed) {
  const Tensor x = random_tensor({s.batch, s.in_channels, s.height, s.width}, seed);
  const Tensor w = random_tensor({s.out_channels, s.in_channels, s.kernel, s.kernel}, seed + 1, 0.2);
  const Tensor b = random_tensor({s.out_channels}, seed + 2);
  const Tensor dy = random_tensor({s.batch, s.out_channels, s.out_height(), s.out_width()}, seed + 3);
  const Tensor dw0 = random_tensor(w.shape(), seed + 4), db0 = random_tensor(b.shape(), seed + 5);

  Tensor y(dy.shape()), dx(x.shape()), dw = dw0.clone(), db = db0.clone();
  compute().conv2d_forward(s, x.data(), w.data(), bias ? b.data() : nullptr, y.data());
  compute().conv2d_backward(s, x.data(), w.data(), dy.data(), dx.data(), dw.data(), bias ? db.data() : nullptr);

  Tensor gx = x.to(kGpu), gw = w.to(kGpu), gb = b.to(kGpu), gdy = dy.to(kGpu);
  Tensor gy(dy.shape(), kGpu), gdx(x.shape(), kGpu), gdw = dw0.to(kGpu), gdb = db0.to(kGpu);
  Backend& gpu = compute(kGpu);
  gpu.conv2d_forward(s, on(gx), on(gw), bias ? on(gb) : nullptr, on(gy));
  gpu.conv2d_backward(s, on(gx), on(gw), on(gdy), on(gdx), on(gdw), bias ? on(gdb) : nullptr);

  double worst = std::max({rel_l2(gy, y), rel_l2(gdx, dx), rel_l2(gdw, dw)});
  if (bias) worst = std::max(worst, rel_l2(gdb, db));
  return worst;
}

const std::vector<ConvCase> kConvCases = {
    {{2, 3, 17, 15, 8, 3, 1, 1}, true},   // 3×3, odd sizes
    {{2, 8, 16, 16, 16, 3, 2, 1}, false},  // strided (ResNet's downsampling 3×3)
    {{3, 16, 9, 9, 32, 1, 1, 0}, false},   // 1×1 (bottleneck)
    {{2, 16, 9, 9, 32, 1, 2, 0}, true},    // 1×1 stride 2 (projection shortcut)
    {{2, 3, 32, 32, 8, 7, 2, 3}, false},   // the ResNet stem
    {{4, 1, 28, 28, 6, 5, 1, 0}, true},    // the MNIST net's first layer
};

}  // namespace

TEST_CASE("GPU convolution in strict float32 matches the CPU backend", "[gpu][conv]") {
  StrictFloat32 strict;
  uint64_t seed = 10;
  for (const ConvCase& c : kConvCases) {
    INFO("conv x[" << c.shape.batch << "," << c.shape.in_channels << "," << c.shape.height << "," << c.shape.width
                   << "] k" << c.shape.kernel << " s" << c.shape.stride << " p" << c.shape.padding);
    CHECK(conv_error(c.shape, c.bias, seed += 10) < 1e-5);
  }
}

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

TEST_CASE("GPU convolution without an input gradient leaves dx alone", "[gpu][conv]") {
  StrictFloat32 strict;
  const ConvShape s{2, 3, 8, 8, 4, 3, 1, 1};
  Tensor x = random_tensor({2, 3, 8, 8}, 1).to(kGpu), w = random_tensor({4, 3, 3, 3}, 2).to(kGpu);
  Tensor dy = random_tensor({2, 4, 8, 8}, 3).to(kGpu), dw({4, 3, 3, 3}, kGpu);
  compute(kGpu).conv2d_backward(s, on(x), on(w), on(dy), nullptr, on(dw), nullptr);
  Tensor cdw({4, 3, 3, 3});
  compute().conv2d_backward(s, x.cpu().data(), w.cpu().data(), dy.cpu().data(), nullptr, cdw.data(), nullptr);
  CHECK(rel_l2(dw, cdw) < 1e-5);
}

TEST_CASE("GPU linear layer matches the CPU backend, in float32 and float16", "[gpu][linear]") {
  const int64_t rows = 7, in = 33, out = 10;
  const Tensor x = random_tensor({rows, in}, 1), w = random_tensor({out, in}, 2), b = random_tensor({out}, 3);
  const Tensor dy = random_tensor({rows, out}, 4), dw0 = random_tensor({out, in}, 5), db0 = random_tensor({out}, 6);
  Tensor y({rows, out}), dx({rows, in}), dw = dw0.clone(), db = db0.clone();
  compute().linear_forward(rows, in, out, x.data(), w.data(), b.data(), y.data());
  compute().linear_backward(rows, in, out, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data());

  for (kolo::DType precision : {kolo::DType::Float32, kolo::DType::Float16}) {
    set_compute_precision(kGpu, precision);
    const double bound = precision == kolo::DType::Float32 ? 1e-6 : 2e-3;
    Tensor gx = x.to(kGpu), gw = w.to(kGpu), gb = b.to(kGpu), gdy = dy.to(kGpu);
    Tensor gy({rows, out}, kGpu), gdx({rows, in}, kGpu), gdw = dw0.to(kGpu), gdb = db0.to(kGpu);
    compute(kGpu).linear_forward(rows, in, out, on(gx), on(gw), on(gb), on(gy));
    compute(kGpu).linear_backward(rows, in, out, on(gx), on(gw), on(gdy), on(gdx), on(gdw), on(gdb));
    CHECK(rel_l2(gy, y) < bound);
    CHECK(rel_l2(gdx, dx) < bound);
    CHECK(rel_l2(gdw, dw) < bound);
    CHECK(rel_l2(gdb, db) < 1e-6);  // summed in double from float32 dy either way
  }
  set_compute_precision(kGpu, kolo::DType::Float32);
}

TEST_CASE("GPU batch-norm statistics are the CPU's two-pass double sums", "[gpu][batchnorm]") {
  const int64_t n = 3, c = 5, hw = 37;
  // A large mean next to a small spread: what one-pass float statistics get wrong.
  Tensor x = random_tensor({n, c, hw}, 1);
  for (int64_t i = 0; i < x.numel(); ++i) x[i] += 1000.0f;
  Tensor dy = random_tensor({n, c, hw}, 2), gx = x.to(kGpu), gdy = dy.to(kGpu);
  std::vector<double> sum(c), gsum(c), squares(c), gsquares(c), mean(c);
  compute().channel_sums(n, c, hw, x.data(), sum.data());
  compute(kGpu).channel_sums(n, c, hw, on(gx), gsum.data());
  for (int64_t i = 0; i < c; ++i) {
    CHECK(gsum[i] == Approx(sum[i]).epsilon(1e-13));
    mean[i] = sum[i] / double(n * hw);
  }
  compute().channel_centered_squares(n, c, hw, x.data(), mean.data(), squares.data());
  compute(kGpu).channel_centered_squares(n, c, hw, on(gx), mean.data(), gsquares.data());
  for (int64_t i = 0; i < c; ++i) CHECK(gsquares[i] == Approx(squares[i]).epsilon(1e-12));

  Tensor m = random_tensor({c}, 3), istd = random_tensor({c}, 4), gamma = random_tensor({c}, 5),
         beta = random_tensor({c}, 6);
  Tensor gm = m.to(kGpu), gistd = istd.to(kGpu), ggamma = gamma.to(kGpu), gbeta = beta.to(kGpu);
  Tensor y({n, c, hw}), gy({n, c, hw}, kGpu);
  compute().batchnorm_apply(n, c, hw, x.data(), m.data(), istd.data(), gamma.data(), beta.data(), y.data());
  compute(kGpu).batchnorm_apply(n, c, hw, on(gx), on(gm), on(gistd), on(ggamma), on(gbeta), on(gy));
  CHECK(rel_l2(gy, y) < 1e-6);

  std::vector<double> sdy(c), sdx(c), gsdy(c), gsdx(c);
  compute().batchnorm_grad_sums(n, c, hw, x.data(), dy.data(), m.data(), istd.data(), sdy.data(), sdx.data());
  compute(kGpu).batchnorm_grad_sums(n, c, hw, on(gx), on(gdy), on(gm), on(gistd), gsdy.data(), gsdx.data());
  for (int64_t i = 0; i < c; ++i) {
    CHECK(gsdy[i] == Approx(sdy[i]).epsilon(1e-12));
    CHECK(gsdx[i] == Approx(sdx[i]).epsilon(1e-10));
  }
  Tensor dx({n, c, hw}), gdx({n, c, hw}, kGpu);
  compute().batchnorm_backward_input(n, c, hw, x.data(), dy.data(), m.data(), istd.data(), gamma.data(), sdy.data(),
                                     sdx.data(), double(n * hw), dx.data());
  compute(kGpu).batchnorm_backward_input(n, c, hw, on(gx), on(gdy), on(gm), on(gistd), on(ggamma), sdy.data(),
                                         sdx.data(), double(n * hw), on(gdx));
  CHECK(rel_l2(gdx, dx) < 1e-6);
}

TEST_CASE("GPU ReLU, residual add and scaling are exact", "[gpu][elementwise]") {
  Tensor x = random_tensor({1000}, 1), b = random_tensor({1000}, 2), dy = random_tensor({1000}, 3);
  Tensor gx = x.to(kGpu), gb = b.to(kGpu), gdy = dy.to(kGpu), gdx({1000}, kGpu), dx({1000});
  compute().relu_forward(1000, x.data());
  compute(kGpu).relu_forward(1000, on(gx));
  CHECK(identical(gx, x));
  compute().relu_backward(1000, x.data(), dy.data(), dx.data());
  compute(kGpu).relu_backward(1000, on(gx), on(gdy), on(gdx));
  CHECK(identical(gdx, dx));
  compute().add_into(1000, x.data(), b.data());
  compute(kGpu).add_into(1000, on(gx), on(gb));
  CHECK(identical(gx, x));
  compute(kGpu).scale(1000, on(gx), 0.5f);
  for (int64_t i = 0; i < 1000; ++i) x[i] *= 0.5f;
  CHECK(identical(gx, x));
}

TEST_CASE("GPU max pooling keeps the first maximum and its gradient is the CPU's, bit for bit", "[gpu][pooling]") {
  const std::vector<PoolShape> shapes = {{2, 3, 9, 11, 3, 2, 1},   // ResNet's stem pool (overlapping)
                                         {2, 3, 8, 8, 2, 2, 0},    // the MNIST net's
                                         {2, 4, 7, 7, 1, 2, 0},    // ResNetV2's shortcut pool
                                         {1, 2, 10, 10, 3, 2, 0}};  // ResNetV2's pool after padding
  for (const PoolShape& s : shapes) {
    const Tensor x = integer_tensor({s.batch, s.channels, s.height, s.width}, 7);  // many ties
    const int64_t outputs = s.batch * s.channels * s.out_height() * s.out_width();
    const Tensor dy = random_tensor({outputs}, 8);
    Tensor y({outputs}), arg({outputs}), dx(x.shape());
    compute().maxpool_forward(s, x.data(), y.data(), indices(arg));
    compute().maxpool_backward(s, dy.data(), indices(arg), dx.data());
    Tensor gx = x.to(kGpu), gdy = dy.to(kGpu), gy({outputs}, kGpu), garg({outputs}, kGpu), gdx(x.shape(), kGpu);
    compute(kGpu).maxpool_forward(s, on(gx), on(gy), indices(garg));
    compute(kGpu).maxpool_backward(s, on(gdy), indices(garg), on(gdx));
    CHECK(identical(gy, y));
    CHECK(identical(garg, arg));  // compares the int32 bit patterns as floats
    CHECK(identical(gdx, dx));
  }
}

TEST_CASE("GPU global average pooling and zero padding match the CPU", "[gpu][pooling]") {
  const Tensor x = random_tensor({3, 4, 7, 5}, 1), dy = random_tensor({12}, 2);
  Tensor y({12}), dx({3, 4, 7, 5}), gx = x.to(kGpu), gdy = dy.to(kGpu), gy({12}, kGpu), gdx({3, 4, 7, 5}, kGpu);
  compute().global_avg_pool_forward(12, 35, x.data(), y.data());
  compute(kGpu).global_avg_pool_forward(12, 35, on(gx), on(gy));
  CHECK(rel_l2(gy, y) < 1e-7);
  compute().global_avg_pool_backward(12, 35, dy.data(), dx.data());
  compute(kGpu).global_avg_pool_backward(12, 35, on(gdy), on(gdx));
  CHECK(identical(gdx, dx));

  Tensor padded({12, 9, 7}), gpadded({12, 9, 7}, kGpu), back({3, 4, 7, 5}), gback({3, 4, 7, 5}, kGpu);
  compute().zero_pad_forward(12, 7, 5, 1, x.data(), padded.data());
  compute(kGpu).zero_pad_forward(12, 7, 5, 1, on(gx), on(gpadded));
  CHECK(identical(gpadded, padded));
  compute().zero_pad_backward(12, 7, 5, 1, padded.data(), back.data());
  compute(kGpu).zero_pad_backward(12, 7, 5, 1, on(gpadded), on(gback));
  CHECK(identical(gback, x));
}

TEST_CASE("GPU softmax cross-entropy and accuracy match the CPU's loss.cc", "[gpu][loss]") {
  Tensor logits = random_tensor({9, 1000}, 1, 3.0);
  std::vector<int32_t> labels = {0, 999, 5, 17, 500, 3, 3, 998, 1};
  const LossResult want = softmax_cross_entropy(logits, labels);
  const LossResult got = softmax_cross_entropy(logits.to(kGpu), labels);
  CHECK(got.loss == Approx(want.loss).epsilon(1e-12));
  CHECK(got.grad.device() == kGpu);
  CHECK(rel_l2(got.grad, want.grad) < 1e-7);

  Tensor ties = integer_tensor({64, 10}, 2, 3);  // first maximum decides
  std::vector<int32_t> y(64);
  for (int i = 0; i < 64; ++i) y[static_cast<std::size_t>(i)] = i % 10;
  CHECK(accuracy(ties.to(kGpu), y) == accuracy(ties, y));
  CHECK_THROWS_AS(softmax_cross_entropy(logits.to(kGpu), {0, 1}), kolo::Error);  // checked on the host
}
