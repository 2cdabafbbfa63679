// Kernels conformance (kernels_conformance.h): the parameter-free layers' kernels (ReLU, max
// and global average pooling, zero padding) and the elementwise ones (add_into, scale,
// multiply) on every implementation.
//
// Bounds. Most of these are a select, a copy or one float operation per element, which
// IEEE arithmetic rounds the same way everywhere (and the double reference rounded to
// float gives the same bits: a double holds a float sum or product exactly, or rounds it
// harmlessly): bit for bit, on every device. Exceptions: max pooling's input gradient adds
// the dy of overlapping windows in float (against the double reference, 1e-7; the GPU
// gathers them in the CPU's order: bit for bit), and global average pooling sums a plane
// in double and rounds once (1e-7 both ways: one rounding).
#include <limits>

#include "kernels_conformance.h"

using namespace kolo::models;
using namespace kolo::models::conformance;
using kolo::Device;

namespace {
// Special values among the normal ones: NaN, ±inf, -0.
Tensor with_special_values(Tensor t) {
  t[3] = std::numeric_limits<float>::quiet_NaN();
  t[5] = std::numeric_limits<float>::infinity();
  t[7] = -std::numeric_limits<float>::infinity();
  t[11] = -0.0f;
  return t;
}
}  // namespace

TEST_CASE("relu_forward and relu_backward: x where x > 0 (NaN to 0), dy where y > 0, in place too",
          "[kernels][relu]") {
  const Device device = GENERATE(kernel_devices());
  if (!present(device)) return;
  const int64_t n = 1000;
  const Tensor x = with_special_values(random_tensor({n}, 1)), dy = random_tensor({n}, 2);
  const auto run = [&](Device d) {
    Tensor y = copy_to(x, d), dx = Tensor::uninitialized({n}, d), in_place = copy_to(dy, d);
    const Tensor dyd = dy.to(d);
    kernels(d).relu_forward(n, y.data());
    kernels(d).relu_backward(n, y.data(), dyd.data(), dx.data());
    kernels(d).relu_backward(n, y.data(), in_place.data(), in_place.data());
    return Outputs{{"y", values(y)}, {"dx", values(dx)}, {"dx in place", values(in_place)}};
  };
  std::vector<double> y(n), dx(n);
  for (int64_t i = 0; i < n; ++i) {
    y[static_cast<std::size_t>(i)] = x[i] > 0.0f ? x[i] : 0.0f;
    dx[static_cast<std::size_t>(i)] = x[i] > 0.0f ? dy[i] : 0.0f;
  }
  conform(device, run, {{"y", y, {0, 0}}, {"dx", dx, {0, 0}}, {"dx in place", dx, {0, 0}}});
}

TEST_CASE("maxpool_forward and maxpool_backward: the first maximum in scan order (NaN wins), its gradient",
          "[kernels][pooling]") {
  const Device device = GENERATE(kernel_devices());
  if (!present(device)) return;
  const std::vector<PoolShape> shapes = {{2, 3, 9, 11, 3, 2, 1},    // ResNet's stem pool (overlapping, padded)
                                         {2, 3, 8, 8, 2, 2, 0},     // the MNIST net's (the 2×2 fast path)
                                         {2, 4, 7, 7, 1, 2, 0},     // ResNetV2's shortcut pool
                                         {1, 2, 10, 10, 3, 2, 0}};  // ResNetV2's pool after padding
  for (const PoolShape& s : shapes) {
    INFO("pool x[" << s.batch << "," << s.channels << "," << s.height << "," << s.width << "] k" << s.kernel << " s"
                   << s.stride << " p" << s.padding);
    Tensor x = integer_tensor({s.batch, s.channels, s.height, s.width}, 7);  // many ties
    x[5] = std::numeric_limits<float>::quiet_NaN();
    const int64_t P = s.out_height(), Q = s.out_width(), planes = s.batch * s.channels, outputs = planes * P * Q;
    const Tensor dy = random_tensor({outputs}, 8);
    const auto run = [&](Device d) {
      Tensor y = Tensor::uninitialized({outputs}, d), argmax = Tensor::uninitialized({outputs}, d);
      Tensor dx = Tensor::uninitialized(x.shape(), d);
      const Tensor xd = x.to(d), dyd = dy.to(d);
      int32_t* indices = reinterpret_cast<int32_t*>(argmax.data());  // int32 in a float tensor's words
      kernels(d).maxpool_forward(s, xd.data(), y.data(), indices);
      kernels(d).maxpool_backward(s, dyd.data(), indices, dx.data());
      const Tensor host = argmax.cpu();
      std::vector<double> at(static_cast<std::size_t>(outputs));
      for (int64_t i = 0; i < outputs; ++i) at[static_cast<std::size_t>(i)] = reinterpret_cast<const int32_t*>(host.data())[i];
      return Outputs{{"y", values(y)}, {"argmax", at}, {"dx", values(dx)}};
    };
    std::vector<double> y(static_cast<std::size_t>(outputs)), at(y.size()), dx(static_cast<std::size_t>(x.numel()));
    for (int64_t plane = 0; plane < planes; ++plane)
      for (int64_t p = 0; p < P; ++p)
        for (int64_t q = 0; q < Q; ++q) {
          int64_t best = -1;
          for (int64_t r = 0; r < s.kernel; ++r)
            for (int64_t k = 0; k < s.kernel; ++k) {
              const int64_t h = p * s.stride - s.padding + r, w = q * s.stride - s.padding + k;
              if (h < 0 || h >= s.height || w < 0 || w >= s.width) continue;
              const int64_t i = h * s.width + w;
              const float v = x[plane * s.height * s.width + i];
              if (best < 0 || v > x[plane * s.height * s.width + best] || std::isnan(v)) best = i;
            }
          const auto o = static_cast<std::size_t>((plane * P + p) * Q + q);
          y[o] = x[plane * s.height * s.width + best];
          at[o] = double(best);
          dx[static_cast<std::size_t>(plane * s.height * s.width + best)] += dy[static_cast<int64_t>(o)];
        }
    conform(device, run, {{"y", y, {0, 0}}, {"argmax", at, {0, 0}}, {"dx", dx, {1e-7, 0}}});
  }
}

TEST_CASE("global_avg_pool_forward and _backward: each plane's mean, and dy / hw over the plane",
          "[kernels][pooling]") {
  const Device device = GENERATE(kernel_devices());
  if (!present(device)) return;
  const int64_t planes = 12, hw = 35;
  const Tensor x = random_tensor({planes, hw}, 1), dy = random_tensor({planes}, 2);
  const auto run = [&](Device d) {
    Tensor y = Tensor::uninitialized({planes}, d), dx = Tensor::uninitialized({planes, hw}, d);
    const Tensor xd = x.to(d), dyd = dy.to(d);
    kernels(d).global_avg_pool_forward(planes, hw, xd.data(), y.data());
    kernels(d).global_avg_pool_backward(planes, hw, dyd.data(), dx.data());
    return Outputs{{"y", values(y)}, {"dx", values(dx)}};
  };
  std::vector<double> y(planes), dx(static_cast<std::size_t>(planes * hw));
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t j = 0; j < hw; ++j) y[static_cast<std::size_t>(p)] += x[p * hw + j];
    y[static_cast<std::size_t>(p)] /= double(hw);
    for (int64_t j = 0; j < hw; ++j) dx[static_cast<std::size_t>(p * hw + j)] = double(dy[p]) / double(hw);
  }
  conform(device, run, {{"y", y, {1e-7, 1e-7}}, {"dx", dx, {0, 0}}});
}

TEST_CASE("zero_pad_forward and zero_pad_backward: planes inside a zero frame, and back out", "[kernels][padding]") {
  const Device device = GENERATE(kernel_devices());
  if (!present(device)) return;
  const int64_t planes = 12, h = 7, w = 5, pad = 2, H = h + 2 * pad, W = w + 2 * pad;
  const Tensor x = random_tensor({planes, h, w}, 1), dy = random_tensor({planes, H, W}, 2);
  const auto run = [&](Device d) {
    Tensor y = Tensor::full({planes, H, W}, 7.0f, d), dx = Tensor::uninitialized({planes, h, w}, d);
    const Tensor xd = x.to(d), dyd = dy.to(d);
    kernels(d).zero_pad_forward(planes, h, w, pad, xd.data(), y.data());
    kernels(d).zero_pad_backward(planes, h, w, pad, dyd.data(), dx.data());
    return Outputs{{"y", values(y)}, {"dx", values(dx)}};
  };
  std::vector<double> y(static_cast<std::size_t>(planes * H * W)), dx(static_cast<std::size_t>(x.numel()));
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t r = 0; r < h; ++r)
      for (int64_t c = 0; c < w; ++c) {
        y[static_cast<std::size_t>((p * H + r + pad) * W + c + pad)] = x[(p * h + r) * w + c];
        dx[static_cast<std::size_t>((p * h + r) * w + c)] = dy[(p * H + r + pad) * W + c + pad];
      }
  conform(device, run, {{"y", y, {0, 0}}, {"dx", dx, {0, 0}}});
}

TEST_CASE("add_into, scale and multiply: a += b, x *= factor, out = a·b (out may be an input)",
          "[kernels][elementwise]") {
  const Device device = GENERATE(kernel_devices());
  if (!present(device)) return;
  const int64_t n = 70001;  // more than one block's worth, and not a multiple of any vector width
  const Tensor a = with_special_values(random_tensor({n}, 1)), b = random_tensor({n}, 2, 3.0);
  const float factor = 0.37f;
  const auto run = [&](Device d) {
    Tensor sum = copy_to(a, d), scaled = copy_to(a, d), product = Tensor::uninitialized({n}, d);
    Tensor in_place = copy_to(a, d);
    const Tensor bd = b.to(d), ad = a.to(d);
    Kernels& k = kernels(d);
    k.add_into(n, sum.data(), bd.data());
    k.scale(n, scaled.data(), factor);
    k.multiply(n, ad.data(), bd.data(), product.data());
    k.multiply(n, in_place.data(), bd.data(), in_place.data());
    return Outputs{{"a + b", values(sum)}, {"a * factor", values(scaled)}, {"a * b", values(product)},
                   {"a * b in place", values(in_place)}};
  };
  std::vector<double> sum(n), scaled(n), product(n);
  for (int64_t i = 0; i < n; ++i) {
    const auto at = static_cast<std::size_t>(i);
    sum[at] = static_cast<float>(double(a[i]) + double(b[i]));
    scaled[at] = static_cast<float>(double(a[i]) * double(factor));
    product[at] = static_cast<float>(double(a[i]) * double(b[i]));
  }
  conform(device, run, {{"a + b", sum, {0, 0}}, {"a * factor", scaled, {0, 0}}, {"a * b", product, {0, 0}},
                        {"a * b in place", product, {0, 0}}});
}
