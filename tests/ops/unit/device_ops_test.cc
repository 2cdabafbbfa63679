// The host DeviceOps (ops/device.h): the batched convert that packs and unpacks fusion
// buffers (scaling, 16-bit casts for compression, zeros for a joined rank) against
// element-by-element references. The same checks run against the CUDA kernels in
// tests/ops/gpu/.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include "ops/device.h"
#include "ops/dtype.h"

using kolo::DType;
using kolo::ops::CopyPiece;

TEST_CASE("one convert packs many tensors, with zeros and a prescale", "[device-ops]") {
  auto ops = kolo::ops::make_cpu_ops();
  CHECK(ops->device() == kolo::Device::cpu());
  CHECK(ops->record() == nullptr);  // host work is done when the call returns
  std::vector<float> a = {1, 2, 3}, b = {4.5f}, packed(6, -1.0f);
  const std::vector<CopyPiece> pieces = {
      {packed.data(), a.data(), 3}, {packed.data() + 3, nullptr, 2}, {packed.data() + 5, b.data(), 1}};
  ops->convert(pieces, DType::Float32, DType::Float32, 0.5);
  CHECK(packed == std::vector<float>{0.5f, 1.0f, 1.5f, 0.0f, 0.0f, 2.25f});
}

TEST_CASE("converting to and from 16 bits rounds like the scalar reference", "[device-ops]") {
  auto ops = kolo::ops::make_cpu_ops();
  const std::vector<float> values = {0.0f, -0.0f, 1.0f, 1.0f / 3.0f, 65504.0f, 70000.0f, 1e-7f, -2.5e-5f,
                                     3.14159f, -1e30f, INFINITY, NAN};
  const int n = static_cast<int>(values.size());
  for (float factor : {1.0f, 0.25f, 3.0f}) {
    INFO("factor " << factor);
    std::vector<uint16_t> half(values.size()), bf(values.size());
    const CopyPiece to_half{half.data(), values.data(), n}, to_bf{bf.data(), values.data(), n};
    ops->convert({&to_half, 1}, DType::Float32, DType::Float16, factor);
    ops->convert({&to_bf, 1}, DType::Float32, DType::BFloat16, factor);
    for (int i = 0; i < n; ++i) {
      INFO("value " << values[i]);
      CHECK(half[i] == kolo::ops::float_to_half(values[i] * factor));
      CHECK(bf[i] == kolo::ops::float_to_bfloat16(values[i] * factor));
    }
    std::vector<float> back(values.size());
    const CopyPiece from_half{back.data(), half.data(), n};
    ops->convert({&from_half, 1}, DType::Float16, DType::Float32, 2.0);
    for (int i = 0; i < n; ++i) {
      const float expected = kolo::ops::half_to_float(half[i]) * 2.0f;
      if (std::isnan(expected)) CHECK(std::isnan(back[i]));
      else CHECK(back[i] == expected);
    }
  }
}

TEST_CASE("float64 is scaled in double and cast to 16 bits through float", "[device-ops]") {
  auto ops = kolo::ops::make_cpu_ops();
  std::vector<double> d = {1.0 / 3.0, 1e300};
  std::vector<double> scaled(2);
  const CopyPiece piece{scaled.data(), d.data(), 2};
  ops->convert({&piece, 1}, DType::Float64, DType::Float64, 3.0);
  CHECK(scaled[0] == d[0] * 3.0);
  CHECK(scaled[1] == d[1] * 3.0);
  std::vector<uint16_t> half(2);
  const CopyPiece cast{half.data(), d.data(), 2};
  ops->convert({&cast, 1}, DType::Float64, DType::Float16, 1.0);
  CHECK(half[0] == kolo::ops::float_to_half(static_cast<float>(d[0])));
  CHECK(half[1] == 0x7c00);  // overflows to +inf
}

TEST_CASE("integers are copied (and zeroed) without scaling", "[device-ops]") {
  auto ops = kolo::ops::make_cpu_ops();
  std::vector<int64_t> in = {1, -2, 1LL << 40}, out(5, 7);
  const std::vector<CopyPiece> pieces = {{out.data(), in.data(), 3}, {out.data() + 3, nullptr, 2}};
  ops->convert(pieces, DType::Int64, DType::Int64, 1.0);
  CHECK(out == std::vector<int64_t>{1, -2, 1LL << 40, 0, 0});
}

TEST_CASE("a growing buffer reallocates only when asked for more", "[device-ops]") {
  auto ops = kolo::ops::make_cpu_ops();
  kolo::ops::GrowingBuffer buffer;
  void* first = buffer.get(*ops, 100);
  CHECK(buffer.get(*ops, 50) == first);
  CHECK(buffer.get(*ops, 100) == first);
  void* bigger = buffer.get(*ops, 1000);
  std::memset(bigger, 0, 1000);  // all of it is usable
}
