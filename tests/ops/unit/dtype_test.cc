// ops/dtype: 16-bit float conversions against independent references, reduce_into for
// every dtype and op, and scaling.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "kolo/kolo.h"
#include "ops/dtype.h"
#include "support/values.h"

using kolo::DType;
using kolo::ReduceOp;
using kolo_test::Buffer;
namespace ops = kolo::ops;

namespace {

bool is_nan_half(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }
bool is_nan_bf16(uint16_t b) { return (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0; }

float float_from_bits(uint32_t bits) { return std::bit_cast<float>(bits); }

}  // namespace

TEST_CASE("dtype sizes, names and floating-point flags", "[dtype]") {
  CHECK(kolo::dtype_size(DType::Float32) == 4);
  CHECK(kolo::dtype_size(DType::Float64) == 8);
  CHECK(kolo::dtype_size(DType::Float16) == 2);
  CHECK(kolo::dtype_size(DType::BFloat16) == 2);
  CHECK(kolo::dtype_size(DType::Int8) == 1);
  CHECK(kolo::dtype_size(DType::UInt8) == 1);
  CHECK(kolo::dtype_size(DType::Int32) == 4);
  CHECK(kolo::dtype_size(DType::Int64) == 8);
  CHECK(std::string(kolo::dtype_name(DType::BFloat16)) == "bfloat16");
  CHECK(std::string(kolo::dtype_name(DType::UInt8)) == "uint8");
  CHECK(std::string(kolo::op_name(ReduceOp::Average)) == "average");
  CHECK(std::string(kolo::op_name(ReduceOp::Product)) == "product");
  for (DType d : kolo_test::all_dtypes()) CHECK(kolo::is_floating_point(d) == kolo_test::floating(d));
  CHECK(kolo::TensorView{nullptr, DType::Float32, {}}.num_elements() == 1);
  CHECK(kolo::TensorView{nullptr, DType::Float64, {2, 3}}.num_bytes() == 48);
}

TEST_CASE("half_to_float decodes every float16 bit pattern exactly", "[dtype][float16]") {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const uint16_t h = static_cast<uint16_t>(bits);
    const float got = ops::half_to_float(h);
    const double want = kolo_test::half_bits_to_double(h);
    if (std::isnan(want)) {
      if (!std::isnan(got)) FAIL("half " << bits << " should decode to NaN, got " << got);
    } else if (double(got) != want || std::signbit(got) != std::signbit(want)) {
      FAIL("half " << bits << " decoded to " << got << ", expected " << want);
    }
  }
  CHECK(ops::half_to_float(0x3c00) == 1.0f);
  CHECK(ops::half_to_float(0x7bff) == 65504.0f);
  CHECK(ops::half_to_float(0x0001) == std::ldexp(1.0f, -24));  // smallest subnormal
  CHECK(ops::half_to_float(0x0400) == std::ldexp(1.0f, -14));  // smallest normal
  CHECK(std::isinf(ops::half_to_float(0xfc00)));
  CHECK(std::signbit(ops::half_to_float(0x8000)));
}

TEST_CASE("float16 round trip is the identity for every non-NaN pattern", "[dtype][float16]") {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const uint16_t h = static_cast<uint16_t>(bits);
    const uint16_t back = ops::float_to_half(ops::half_to_float(h));
    if (is_nan_half(h)) {
      if (!is_nan_half(back)) FAIL("NaN half " << bits << " came back as " << back);
      if ((back & 0x8000) != (h & 0x8000)) FAIL("NaN half " << bits << " lost its sign");
    } else if (back != h) {
      FAIL("half " << bits << " came back as " << back);
    }
  }
}

TEST_CASE("float_to_half rounds to nearest even at every halfway point", "[dtype][float16]") {
  // Midpoints between consecutive finite halves (exact in float: 12 significant bits).
  for (uint32_t bits = 0; bits < 0x7bff; ++bits) {
    const double lo = kolo_test::half_bits_to_double(static_cast<uint16_t>(bits));
    const double hi = kolo_test::half_bits_to_double(static_cast<uint16_t>(bits + 1));
    const float mid = static_cast<float>((lo + hi) / 2);
    REQUIRE(double(mid) == (lo + hi) / 2);
    const uint16_t even = (bits % 2 == 0) ? uint16_t(bits) : uint16_t(bits + 1);
    const uint16_t got = ops::float_to_half(mid);
    if (got != even) FAIL("midpoint " << mid << " between halves " << bits << " and " << bits + 1
                                      << " rounded to " << got << ", expected " << even);
    // Just below / above the midpoint: round down / up regardless of parity.
    const float below = std::nextafter(mid, 0.0f), above = std::nextafter(mid, INFINITY);
    if (ops::float_to_half(below) != bits) FAIL("just below midpoint " << bits << " rounded up");
    if (ops::float_to_half(above) != bits + 1) FAIL("just above midpoint " << bits << " rounded down");
    if (ops::float_to_half(-mid) != (0x8000 | even)) FAIL("negative midpoint " << bits);
  }
}

namespace {

// Both 16-bit formats' rounding, once, as a table: float bits in, 16-bit pattern out.
struct RoundingCase {
  DType dtype;
  uint32_t in;   // float32 bits
  uint16_t out;  // expected float16 / bfloat16 bits
  const char* why;
};
constexpr uint16_t kNaN = 0xffff;  // "any NaN of the right sign-agnostic kind"

const RoundingCase kRoundingTable[] = {
    {DType::Float16, 0x3f800000, 0x3c00, "1 is exact"},
    {DType::Float16, 0x80000000, 0x8000, "-0 keeps its sign"},
    {DType::Float16, 0x3f801000, 0x3c00, "1 + 2^-11: tie between 1 and 1 + 2^-10, even stays"},
    {DType::Float16, 0x3f803000, 0x3c02, "1 + 3*2^-11: tie, odd rounds up to even"},
    {DType::Float16, 0x3f801001, 0x3c01, "just above the tie rounds up"},
    {DType::Float16, 0x45001000, 0x6800, "2049: tie between 2048 and 2050, even stays"},
    {DType::Float16, 0x45003000, 0x6802, "2051: tie, odd rounds up to 2052"},
    {DType::Float16, 0x3dcccccd, 0x2e66, "0.1"},
    {DType::Float16, 0x477fe000, 0x7bff, "65504, the largest finite"},
    {DType::Float16, 0x477fefff, 0x7bff, "just below 65520 rounds down to 65504"},
    {DType::Float16, 0x477ff000, 0x7c00, "65520: tie between 65504 and 65536, even is infinity"},
    {DType::Float16, 0x501502f9, 0x7c00, "1e10 overflows to infinity"},
    {DType::Float16, 0xd01502f9, 0xfc00, "-1e10 overflows to -infinity"},
    {DType::Float16, 0x7f800000, 0x7c00, "infinity"},
    {DType::Float16, 0xff800000, 0xfc00, "-infinity"},
    {DType::Float16, 0x38800000, 0x0400, "2^-14, the smallest normal"},
    {DType::Float16, 0x387fc000, 0x03ff, "the largest subnormal"},
    {DType::Float16, 0x33800000, 0x0001, "2^-24, the smallest subnormal"},
    {DType::Float16, 0x33000000, 0x0000, "2^-25: tie between 0 and 2^-24, even is 0"},
    {DType::Float16, 0x33000001, 0x0001, "just above 2^-25 rounds up"},
    {DType::Float16, 0x33c00000, 0x0002, "3*2^-25: tie between 1 and 2 subnormal steps, even is 2"},
    {DType::Float16, 0x34200000, 0x0002, "5*2^-25: tie between 2 and 3 steps, even is 2"},
    {DType::Float16, 0xb0800000, 0x8000, "-2^-30 underflows to -0"},
    {DType::Float16, 0x00000001, 0x0000, "float's smallest subnormal underflows to 0"},
    {DType::Float16, 0x7fc00000, kNaN, "quiet NaN"},
    {DType::Float16, 0x7f800001, kNaN, "NaN with only a low payload bit stays NaN"},
    {DType::BFloat16, 0x3f800000, 0x3f80, "1 is exact"},
    {DType::BFloat16, 0x80000000, 0x8000, "-0 keeps its sign"},
    {DType::BFloat16, 0x3f808000, 0x3f80, "tie, even stays"},
    {DType::BFloat16, 0x3f818000, 0x3f82, "tie, odd rounds up to even"},
    {DType::BFloat16, 0x3f808001, 0x3f81, "just above the tie rounds up"},
    {DType::BFloat16, 0x3f807fff, 0x3f80, "just below the tie rounds down"},
    {DType::BFloat16, 0x7f7fffff, 0x7f80, "float's largest finite rounds to infinity"},
    {DType::BFloat16, 0x7f7f7fff, 0x7f7f, "just below that tie stays finite"},
    {DType::BFloat16, 0xff800000, 0xff80, "-infinity"},
    {DType::BFloat16, 0x00000001, 0x0000, "float's smallest subnormal rounds to 0"},
    {DType::BFloat16, 0x00008000, 0x0000, "subnormal tie, even is 0"},
    {DType::BFloat16, 0x00018000, 0x0002, "subnormal tie, odd rounds up to even"},
    {DType::BFloat16, 0x7f800001, kNaN, "NaN with only a low payload bit stays NaN, not infinity"},
    {DType::BFloat16, 0xff800001, kNaN, "negative NaN with a low payload stays NaN"},
    {DType::BFloat16, 0x7fffffff, kNaN, "NaN whose payload would carry into the exponent"},
};

}  // namespace

TEST_CASE("16-bit float rounding: nearest even, overflow to infinity, subnormals (table)", "[dtype][float16][bfloat16]") {
  for (const RoundingCase& c : kRoundingTable) {
    const float in = float_from_bits(c.in);
    const bool half = c.dtype == DType::Float16;
    const uint16_t got = half ? ops::float_to_half(in) : ops::float_to_bfloat16(in);
    INFO(kolo::dtype_name(c.dtype) << " of float bits 0x" << std::hex << c.in << " (" << c.why << "): got 0x" << got);
    if (c.out == kNaN) CHECK((half ? is_nan_half(got) : is_nan_bf16(got)));
    else CHECK(got == c.out);
  }
}

TEST_CASE("float_to_half matches references on random values", "[dtype][float16]") {
  std::mt19937 rng(12345);
  std::uniform_int_distribution<uint32_t> any_bits;
  for (int i = 0; i < 300000; ++i) {
    // Mostly within half's range: random exponent 100..150 plus fully random patterns.
    uint32_t bits = any_bits(rng);
    if (i % 2 == 0) bits = (bits & 0x807fffffu) | ((100u + bits % 51u) << 23);
    const float f = float_from_bits(bits);
    const uint16_t want = kolo_test::half_bits_nearest(f);
    const uint16_t got = ops::float_to_half(f);
    if (std::isnan(f)) {
      if (!is_nan_half(got)) FAIL("NaN " << bits << " converted to non-NaN " << got);
    } else if (got != want) {
      FAIL("float bits " << bits << " (" << f << ") -> half " << got << ", expected " << want);
    }
#if defined(__FLT16_MAX__)
    // The compiler's own conversion as a second reference.
    if (!std::isnan(f)) {
      const _Float16 h = static_cast<_Float16>(f);
      uint16_t hb;
      std::memcpy(&hb, &h, 2);
      if (hb != got) FAIL("float " << f << " -> half " << got << ", _Float16 gives " << hb);
    }
#endif
  }
}

TEST_CASE("bfloat16 decoding and round trip are exact for every pattern", "[dtype][bfloat16]") {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const uint16_t b = static_cast<uint16_t>(bits);
    const float f = ops::bfloat16_to_float(b);
    const double want = kolo_test::bf16_bits_to_double(b);
    if (std::isnan(want)) {
      if (!std::isnan(f)) FAIL("bf16 " << bits << " should be NaN");
      if (!is_nan_bf16(ops::float_to_bfloat16(f))) FAIL("NaN bf16 " << bits << " lost NaN-ness");
      continue;
    }
    if (double(f) != want) FAIL("bf16 " << bits << " decoded to " << f << ", expected " << want);
    if (ops::float_to_bfloat16(f) != b) FAIL("bf16 " << bits << " did not round-trip");
  }
}

TEST_CASE("float_to_bfloat16 matches a reference on random values", "[dtype][bfloat16]") {
  std::mt19937 rng(777);
  std::uniform_int_distribution<uint32_t> any_bits;
  for (int i = 0; i < 300000; ++i) {
    const uint32_t bits = any_bits(rng);
    const float f = float_from_bits(bits);
    const uint16_t got = ops::float_to_bfloat16(f);
    if (std::isnan(f)) {
      if (!is_nan_bf16(got)) FAIL("NaN " << bits << " -> " << got);
      continue;
    }
    const uint16_t want = kolo_test::bf16_bits_nearest(f);
    if (got != want) FAIL("float bits " << bits << " (" << f << ") -> bf16 " << got << ", expected " << want);
  }
}

namespace {

// reduce_into over `dtype` with a[i], b[i] logical values; checks against `expect`.
template <typename Expect>
void check_reduce(DType dtype, ReduceOp op, const std::vector<double>& a, const std::vector<double>& b,
                  Expect&& expect) {
  Buffer x(dtype, {int64_t(a.size())}), y(dtype, {int64_t(b.size())});
  for (std::size_t i = 0; i < a.size(); ++i) {
    x.set(i, a[i]);
    y.set(i, b[i]);
  }
  const std::vector<std::byte> y_before = y.bytes();
  ops::reduce_into(x.data(), y.data(), x.count(), dtype, op);
  CHECK(y.bytes() == y_before);  // the input is read only
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO(kolo::dtype_name(dtype) << " " << kolo::op_name(op) << " of " << a[i] << " and " << b[i]);
    CHECK(x.get(i) == expect(a[i], b[i]));
  }
}

}  // namespace

TEST_CASE("reduce_into computes sum, min, max and product for every dtype", "[dtype][reduce]") {
  const std::vector<double> a = {0, 1, -2, 5, 7, -3, 2, 10, -8, 0.5, 3};
  const std::vector<double> b = {0, 2, 3, -5, 7, -4, 1, -10, 2, 4, 0.5};
  const std::vector<double> ua = {0, 1, 2, 5, 7, 3, 200, 10, 8, 4, 15};
  const std::vector<double> ub = {0, 2, 3, 5, 9, 4, 55, 12, 2, 4, 16};
  for (DType d : kolo_test::all_dtypes()) {
    const bool integral = !kolo_test::floating(d);
    // Integer dtypes get integer data; uint8 non-negative data.
    std::vector<double> x = d == DType::UInt8 ? ua : a, y = d == DType::UInt8 ? ub : b;
    if (integral)
      for (auto* v : {&x, &y})
        for (double& e : *v) e = std::floor(e);
    if (d == DType::UInt8) {  // keep the sum and product within uint8 for this table
      y[6] = 55;
      x[10] = 15;
      y[10] = 16;
    }
    check_reduce(d, ReduceOp::Sum, x, y, [&](double p, double q) {
      return d == DType::UInt8 ? std::fmod(p + q, 256.0) : p + q;
    });
    check_reduce(d, ReduceOp::Min, x, y, [](double p, double q) { return std::min(p, q); });
    check_reduce(d, ReduceOp::Max, x, y, [](double p, double q) { return std::max(p, q); });
    check_reduce(d, ReduceOp::Product, x, y, [&](double p, double q) {
      return d == DType::UInt8 ? std::fmod(p * q, 256.0) : p * q;
    });
  }
}

TEST_CASE("reduce_into rounds 16-bit results once per step to nearest even", "[dtype][reduce]") {
  // float16: 2048 + 1 = 2049 is halfway between 2048 and 2050: even mantissa is 2048.
  check_reduce(DType::Float16, ReduceOp::Sum, {2048, 2048, 2050, 65504, -65504},
               {1, 3, 1, 32, -32},
               [](double p, double q) {
                 const double s = p + q;
                 if (s == 2049) return 2048.0;
                 if (s == 2051) return 2052.0;
                 if (s == 65536) return double(INFINITY);   // 65504 + 32 rounds to inf
                 if (s == -65536) return double(-INFINITY);
                 return s;
               });
  // bfloat16: 256 + 1 = 257 ties to 256; 258 + 1 = 259 ties to 260.
  check_reduce(DType::BFloat16, ReduceOp::Sum, {256, 258, 1}, {1, 1, 0.5}, [](double p, double q) {
    const double s = p + q;
    return s == 257 ? 256.0 : s == 259 ? 260.0 : s;
  });
  check_reduce(DType::Float16, ReduceOp::Product, {0.5, 300, 3}, {0.5, 300, 0.5},
               [](double p, double q) {
                 const double s = p * q;
                 return s == 90000 ? double(INFINITY) : s;
               });
}

TEST_CASE("reduce_into wraps integer overflow modulo 2^bits, as MPI's sums and products do", "[dtype][reduce]") {
  std::vector<int8_t> a = {127, -128, 100}, b = {1, -1, 100};
  ops::reduce_into(a.data(), b.data(), 3, DType::Int8, ReduceOp::Sum);
  CHECK(a == std::vector<int8_t>{-128, 127, -56});
  std::vector<int64_t> c = {int64_t{1} << 40, -7}, d = {int64_t{1} << 20, 3};
  ops::reduce_into(c.data(), d.data(), 2, DType::Int64, ReduceOp::Product);
  CHECK(c == std::vector<int64_t>{int64_t{1} << 60, -21});
  // Past the type's range (undefined behaviour in signed C++ arithmetic; the sanitizer
  // build would stop here if the reduction overflowed a signed type).
  constexpr int32_t kMax32 = std::numeric_limits<int32_t>::max();
  std::vector<int32_t> e = {kMax32, std::numeric_limits<int32_t>::min(), 65536}, f = {1, -1, 65536};
  ops::reduce_into(e.data(), f.data(), 3, DType::Int32, ReduceOp::Sum);
  CHECK(e == std::vector<int32_t>{std::numeric_limits<int32_t>::min(), kMax32, 131072});
  e = {65536, kMax32, -3};
  f = {65536, 2, 5};
  ops::reduce_into(e.data(), f.data(), 3, DType::Int32, ReduceOp::Product);
  CHECK(e == std::vector<int32_t>{0, -2, -15});  // 2^32 wraps to 0; (2^31 - 1)·2 = 2^32 - 2 wraps to -2
  constexpr int64_t kMax64 = std::numeric_limits<int64_t>::max();
  std::vector<int64_t> g = {kMax64, kMax64}, h = {1, 2};
  ops::reduce_into(g.data(), h.data(), 2, DType::Int64, ReduceOp::Sum);
  CHECK(g == std::vector<int64_t>{std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::min() + 1});
  g = {kMax64, int64_t{1} << 62};
  h = {2, 4};
  ops::reduce_into(g.data(), h.data(), 2, DType::Int64, ReduceOp::Product);
  CHECK(g == std::vector<int64_t>{-2, 0});
  std::vector<uint8_t> u = {255, 16}, v = {255, 16};  // uint8 products promote to int: 65025 fits
  ops::reduce_into(u.data(), v.data(), 2, DType::UInt8, ReduceOp::Product);
  CHECK(u == std::vector<uint8_t>{1, 0});
}

TEST_CASE("reduce_into of zero elements touches nothing", "[dtype][reduce]") {
  for (DType d : kolo_test::all_dtypes())
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max, ReduceOp::Product})
      ops::reduce_into(nullptr, nullptr, 0, d, op);
  SUCCEED();
}

// reduce_scaled fuses the scale into a float sum's loop; the bits must be those of the two
// steps it stands for, reduce and then scale, for every kind of factor (an average over a
// power of two, over 3, a postscale), in place and not.
namespace {

// n random values that dtype d holds exactly (Buffer::set insists): whole numbers below 100
// for the integers, k / 4 for the 16-bit floats. 37 is not a multiple of any vector width.
Buffer random_operand(DType d, std::mt19937& gen, int64_t n = 37) {
  std::uniform_real_distribution<double> value(-1e3, 1e3);
  Buffer x(d, {n});
  for (int64_t i = 0; i < n; ++i) {
    if (!kolo::is_floating_point(d)) x.set(i, double(int(std::abs(value(gen))) % 100));
    else if (d == DType::Float16 || d == DType::BFloat16) x.set(i, double(int(value(gen)) % 256) / 4);
    else x.set(i, double(float(value(gen))));
  }
  return x;
}

}  // namespace

TEST_CASE("reduce_scaled has the bits of reduce followed by scale", "[dtype][reduce][scale]") {
  std::mt19937 gen(7);
  for (DType d : kolo_test::all_dtypes())
    for (double factor : {1.0, 0.5, 0.25, 1.0 / 3, 1.0 / 6, 0.3, 2.5})
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max}) {
        INFO(kolo::dtype_name(d) << " " << kolo::op_name(op) << " scaled by " << factor);
        Buffer a = random_operand(d, gen), b = random_operand(d, gen);
        const int64_t n = a.count();
        Buffer want = a;
        ops::reduce_into(want.data(), b.data(), n, d, op);
        ops::scale(want.data(), n, d, factor);

        Buffer out(d, {n});
        ops::reduce_scaled(out.data(), a.data(), b.data(), n, d, op, factor);
        CHECK(out.bytes() == want.bytes());
        Buffer in_place = a;
        ops::reduce_scaled(in_place.data(), in_place.data(), b.data(), n, d, op, factor);
        CHECK(in_place.bytes() == want.bytes());
      }
}

// With a factor on each operand as well (a ring's prescale, ops/ring_allreduce.h): the bits
// of scale_copy on each operand, reduce, then scale.
TEST_CASE("reduce_scaled with operand factors has the bits of scaling each operand first", "[dtype][reduce][scale]") {
  std::mt19937 gen(11);
  for (DType d : kolo_test::all_dtypes())
    for (double factor : {1.0, 0.5, 1.0 / 3})
      for (double a_factor : {1.0, 0.25, 1.0 / 6, 0.37})
        for (double b_factor : {1.0, 1.0 / 6, 2.5})
          for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Product}) {
            INFO(kolo::dtype_name(d) << " " << kolo::op_name(op) << " (a x " << a_factor << ", b x " << b_factor
                                     << ") x " << factor);
            Buffer a = random_operand(d, gen), b = random_operand(d, gen);
            const int64_t n = a.count();
            Buffer want = a, b_scaled = b;
            ops::scale(want.data(), n, d, a_factor);
            ops::scale(b_scaled.data(), n, d, b_factor);
            ops::reduce_into(want.data(), b_scaled.data(), n, d, op);
            ops::scale(want.data(), n, d, factor);

            Buffer out(d, {n});
            ops::reduce_scaled(out.data(), a.data(), b.data(), n, d, op, factor, a_factor, b_factor);
            CHECK(out.bytes() == want.bytes());
            Buffer into_a = a, into_b = b;
            ops::reduce_scaled(into_a.data(), into_a.data(), b.data(), n, d, op, factor, a_factor, b_factor);
            ops::reduce_scaled(into_b.data(), a.data(), into_b.data(), n, d, op, factor, a_factor, b_factor);
            CHECK(into_a.bytes() == want.bytes());
            CHECK(into_b.bytes() == want.bytes());
          }
}

TEST_CASE("scale multiplies floating dtypes and scale_copy leaves the source alone", "[dtype][scale]") {
  SECTION("float32") {
    std::vector<float> v = {1, -2, 3.5f, 0};
    ops::scale(v.data(), 4, DType::Float32, 0.5);
    CHECK(v == std::vector<float>{0.5f, -1, 1.75f, 0});
  }
  SECTION("float64 is computed in double") {
    std::vector<double> v = {3, 1e300};
    ops::scale(v.data(), 2, DType::Float64, 1.0 / 3);
    CHECK(v[0] == 3 * (1.0 / 3));
    CHECK(v[1] == 1e300 * (1.0 / 3));
  }
  SECTION("float16 rounds the product once") {
    Buffer b(DType::Float16, {4});
    b.set(0, 3);
    b.set(1, -1024);
    b.set(2, 2048);
    b.set(3, 60000);
    ops::scale(b.data(), 4, DType::Float16, 1.5);
    CHECK(b.get(0) == 4.5);
    CHECK(b.get(1) == -1536);
    CHECK(b.get(2) == 3072);
    CHECK(std::isinf(b.get(3)));  // 90000 overflows
  }
  SECTION("bfloat16") {
    Buffer b(DType::BFloat16, {2});
    b.set(0, 3);
    b.set(1, -0.5);
    ops::scale(b.data(), 2, DType::BFloat16, 0.25);
    CHECK(b.get(0) == 0.75);
    CHECK(b.get(1) == -0.125);
  }
  SECTION("scale_copy into another buffer") {
    std::vector<float> src = {1, 2, 3}, dst(3, -1);
    ops::scale_copy(dst.data(), src.data(), 3, DType::Float32, 4);
    CHECK(dst == std::vector<float>{4, 8, 12});
    CHECK(src == std::vector<float>{1, 2, 3});
  }
  SECTION("scale_copy of integers copies unchanged") {
    std::vector<int32_t> src = {5, -6, 7}, dst(3, 0);
    ops::scale_copy(dst.data(), src.data(), 3, DType::Int32, 1.0);
    CHECK(dst == src);
  }
}
