#include "dtype.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

namespace kolo {

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::Float64:
    case DType::Int64: return 8;
    case DType::Float32:
    case DType::Int32: return 4;
    case DType::Float16:
    case DType::BFloat16:
    case DType::Int16: return 2;
    case DType::Int8:
    case DType::UInt8: return 1;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Float16: return "float16";
    case DType::BFloat16: return "bfloat16";
    case DType::Int8: return "int8";
    case DType::UInt8: return "uint8";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::Int16: return "int16";
  }
  return "unknown";
}

const char* op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Average: return "average";
    case ReduceOp::Min: return "min";
    case ReduceOp::Max: return "max";
    case ReduceOp::Product: return "product";
    case ReduceOp::Adasum: return "adasum";
  }
  return "unknown";
}

const char* compression_name(Compression compression) {
  switch (compression) {
    case Compression::None: return "none";
    case Compression::FP16: return "fp16";
    case Compression::BF16: return "bf16";
  }
  return "unknown";
}

bool is_floating_point(DType dtype) {
  return dtype == DType::Float32 || dtype == DType::Float64 || dtype == DType::Float16 ||
         dtype == DType::BFloat16;
}

int64_t TensorView::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace ops {

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);  // inf / nan
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {  // subnormal half: normalise
    int shift = 0;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      ++shift;
    }
    mantissa &= 0x3ffu;
    bits = sign | (static_cast<uint32_t>(113 - shift) << 23) | (mantissa << 13);
  }
  return std::bit_cast<float>(bits);
}

uint16_t float_to_half(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or nan
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds past 65504
  if (abs < 0x38800000u) {  // result is subnormal or zero
    if (abs < 0x33000000u) return sign;  // below half the smallest subnormal
    const uint32_t exponent = abs >> 23;
    const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exponent;  // 14..24
    uint32_t result = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (result & 1u))) ++result;
    return static_cast<uint16_t>(sign | result);
  }
  uint32_t result = ((abs - 0x38000000u) >> 13);
  const uint32_t rest = abs & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (result & 1u))) ++result;
  return static_cast<uint16_t>(sign | result);
}

float bfloat16_to_float(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

uint16_t float_to_bfloat16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

namespace {

// Min and max keep a NaN from either side, as torch.minimum/maximum do: std::min keeps its
// first operand against a NaN, so whether a NaN survived depended on the rank that held it.
template <typename T>
T min_of(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) return a < b || a != a ? a : b;
  else return std::min(a, b);
}
template <typename T>
T max_of(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) return a > b || a != a ? a : b;
  else return std::max(a, b);
}

template <typename T>
T apply(ReduceOp op, T a, T b) {
  switch (op) {
    case ReduceOp::Min: return min_of(a, b);
    case ReduceOp::Max: return max_of(a, b);
    case ReduceOp::Product: return static_cast<T>(a * b);
    default: return static_cast<T>(a + b);
  }
}

// Integers wrap (two's complement), as MPI's sums and products do. The arithmetic is done
// unsigned, where wrapping is defined (signed overflow is undefined behaviour), and at
// least as wide as unsigned int, so that a promotion to int cannot overflow either
// (uint16 × uint16). Floating point types are used as they are.
template <typename T, bool = std::is_integral_v<T>>
struct Arithmetic {
  using type = T;
};
template <typename T>
struct Arithmetic<T, true> {
  using type = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
};

template <typename T>
void reduce_typed(void* out, const void* a_, const void* b_, int64_t count, ReduceOp op) {
  using A = typename Arithmetic<T>::type;
  T* d = static_cast<T*>(out);
  const T* a = static_cast<const T*>(a_);
  const T* b = static_cast<const T*>(b_);
  switch (op) {  // one loop per op so that the compiler vectorises each
    case ReduceOp::Min: for (int64_t i = 0; i < count; ++i) d[i] = min_of(a[i], b[i]); break;
    case ReduceOp::Max: for (int64_t i = 0; i < count; ++i) d[i] = max_of(a[i], b[i]); break;
    case ReduceOp::Product:
      for (int64_t i = 0; i < count; ++i) d[i] = static_cast<T>(static_cast<A>(a[i]) * static_cast<A>(b[i]));
      break;
    default:
      for (int64_t i = 0; i < count; ++i) d[i] = static_cast<T>(static_cast<A>(a[i]) + static_cast<A>(b[i]));
      break;
  }
}

// 16-bit floats are reduced in float and rounded once per pairwise step, as MPI
// reduces pairwise.
template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void reduce_16bit(void* out, const void* a_, const void* b_, int64_t count, ReduceOp op) {
  uint16_t* d = static_cast<uint16_t*>(out);
  const uint16_t* a = static_cast<const uint16_t*>(a_);
  const uint16_t* b = static_cast<const uint16_t*>(b_);
  for (int64_t i = 0; i < count; ++i) d[i] = FromFloat(apply(op, ToFloat(a[i]), ToFloat(b[i])));
}

// How a factor applies. An average's factor, exactly 1/n, divides by n: x / n correctly
// rounded, as torch divides (and as Horovod's tests compare averages), where x * (1/n) is
// often one ulp off. Any other factor multiplies in the tensor's precision (in float for
// float32 and the 16-bit floats, in double for float64 and integers), as Horovod scales.
struct Scaling {
  double factor;
  double divisor = 0;  // n, where factor == 1/n for a whole n > 1

  explicit Scaling(double f) : factor(f) {
    const double n = std::round(1.0 / f);
    // n exact in float too. A power of two is left out: x times 1/2^k in the tensor's own
    // precision is already x / 2^k correctly rounded (the product is exact), and that loop
    // is the fastest (an average over 2, 4, 8 ... ranks).
    if (n >= 2 && n <= 16777216 && 1.0 / n == f && !is_power_of_two(n)) divisor = n;
  }
  static bool is_power_of_two(double n) {
    int exponent = 0;
    return std::frexp(n, &exponent) == 0.5;
  }
};

// Calls body(scale) with the function of one element that `scaling` stands for, one per
// case, so that the loop in each body is free of branches and vectorises. A divisor n is
// exact in T (n <= 2^24), so x / n is the correctly rounded quotient; in float it also
// beat converting to double and multiplying by 1/n (12 against 14 us per 256 KiB in cache
// with SSE2, 6.4 against 11 with AVX2; the same bits, checked over 2^31 / 4099 values).
template <typename T, typename Body>
void with_scaling(const Scaling& scaling, Body&& body) {
  if (scaling.divisor == 0) {
    const T f = static_cast<T>(scaling.factor);
    body([f](T x) { return static_cast<T>(x * f); });
  } else {
    const T n = static_cast<T>(scaling.divisor);
    body([n](T x) { return x / n; });
  }
}

template <typename T>
void scale_floats(void* dst, const void* src, int64_t count, const Scaling& scaling) {
  T* d = static_cast<T*>(dst);
  const T* s = static_cast<const T*>(src);
  with_scaling<T>(scaling, [&](auto scale) {
    for (int64_t i = 0; i < count; ++i) d[i] = scale(s[i]);
  });
}

// Each operand scaled and rounded to T, their sum rounded to T, then scaled: the bits of
// scale_floats on each, a sum, and scale_floats on it.
template <typename T>
void sum_scaled_floats(void* out, const void* a_, const void* b_, int64_t count, const Scaling& scaling,
                       const Scaling& a_scaling, const Scaling& b_scaling) {
  T* d = static_cast<T*>(out);
  const T* a = static_cast<const T*>(a_);
  const T* b = static_cast<const T*>(b_);
  with_scaling<T>(a_scaling, [&](auto scale_a) {
    with_scaling<T>(b_scaling, [&](auto scale_b) {
      with_scaling<T>(scaling, [&](auto scale) {
        for (int64_t i = 0; i < count; ++i) d[i] = scale(static_cast<T>(scale_a(a[i]) + scale_b(b[i])));
      });
    });
  });
}

template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void scale_16bit(void* dst, const void* src, int64_t count, const Scaling& scaling) {
  uint16_t* d = static_cast<uint16_t*>(dst);
  const uint16_t* s = static_cast<const uint16_t*>(src);
  const double f = scaling.factor;
  if (scaling.divisor == 0) {
    const float f32 = static_cast<float>(f);
    for (int64_t i = 0; i < count; ++i) d[i] = FromFloat(ToFloat(s[i]) * f32);
  } else {
    for (int64_t i = 0; i < count; ++i) d[i] = FromFloat(static_cast<float>(static_cast<double>(ToFloat(s[i])) * f));
  }
}

// Integers are scaled as Horovod scales them: in double, truncated toward zero (an average
// of 3 and 4 is 3), saturating at the type's limits rather than overflowing.
template <typename T>
void scale_integer(void* dst, const void* src, int64_t count, const Scaling& scaling) {
  T* d = static_cast<T*>(dst);
  const T* s = static_cast<const T*>(src);
  // The largest double below max + 1: it truncates to max (int64's max itself rounds up to
  // 2^63 as a double, which would overflow).
  const double lowest = static_cast<double>(std::numeric_limits<T>::lowest());
  const double highest = std::nextafter(static_cast<double>(std::numeric_limits<T>::max()) + 1.0, 0.0);
  for (int64_t i = 0; i < count; ++i) {
    const double x = static_cast<double>(s[i]);
    const double scaled = scaling.divisor != 0 ? x / scaling.divisor : x * scaling.factor;
    d[i] = std::isnan(scaled) ? T{0} : static_cast<T>(std::clamp(scaled, lowest, highest));
  }
}

}  // namespace

void reduce(void* out, const void* a, const void* b, int64_t count, DType dtype, ReduceOp op) {
  if (op == ReduceOp::Adasum)  // not element-wise: ops/adasum.h
    throw Error(StatusCode::Internal, "kolo: an element-wise reduction cannot run Adasum");
  switch (dtype) {
    case DType::Float32: return reduce_typed<float>(out, a, b, count, op);
    case DType::Float64: return reduce_typed<double>(out, a, b, count, op);
    case DType::Int8: return reduce_typed<int8_t>(out, a, b, count, op);
    case DType::UInt8: return reduce_typed<uint8_t>(out, a, b, count, op);
    case DType::Int16: return reduce_typed<int16_t>(out, a, b, count, op);
    case DType::Int32: return reduce_typed<int32_t>(out, a, b, count, op);
    case DType::Int64: return reduce_typed<int64_t>(out, a, b, count, op);
    case DType::Float16: return reduce_16bit<half_to_float, float_to_half>(out, a, b, count, op);
    case DType::BFloat16: return reduce_16bit<bfloat16_to_float, float_to_bfloat16>(out, a, b, count, op);
  }
}

void reduce_into(void* inout, const void* in, int64_t count, DType dtype, ReduceOp op) {
  reduce(inout, inout, in, count, dtype, op);
}

void reduce_scaled(void* out, const void* a, const void* b, int64_t count, DType dtype, ReduceOp op,
                   double factor, double a_factor, double b_factor) {
  const bool scaled = factor != 1.0 || a_factor != 1.0 || b_factor != 1.0;
  if (scaled && op == ReduceOp::Sum && dtype == DType::Float32)
    return sum_scaled_floats<float>(out, a, b, count, Scaling(factor), Scaling(a_factor), Scaling(b_factor));
  if (scaled && op == ReduceOp::Sum && dtype == DType::Float64)
    return sum_scaled_floats<double>(out, a, b, count, Scaling(factor), Scaling(a_factor), Scaling(b_factor));
  // Any other dtype or op: the steps one by one, a scaled operand in a copy of its own
  // (out may be the other operand).
  std::vector<std::byte> a_scaled, b_scaled;
  const auto operand = [&](const void* x, double x_factor, std::vector<std::byte>& copy) {
    if (x_factor == 1.0) return x;
    copy.resize(static_cast<std::size_t>(count) * dtype_size(dtype));
    scale_copy(copy.data(), x, count, dtype, x_factor);
    return static_cast<const void*>(copy.data());
  };
  reduce(out, operand(a, a_factor, a_scaled), operand(b, b_factor, b_scaled), count, dtype, op);
  scale(out, count, dtype, factor);
}

void scale_copy(void* dst, const void* src, int64_t count, DType dtype, double factor) {
  if (factor == 1.0) {
    if (dst != src && count > 0) std::memcpy(dst, src, static_cast<std::size_t>(count) * dtype_size(dtype));
    return;
  }
  const Scaling scaling(factor);
  switch (dtype) {
    case DType::Float32: return scale_floats<float>(dst, src, count, scaling);
    case DType::Float64: return scale_floats<double>(dst, src, count, scaling);
    case DType::Float16: return scale_16bit<half_to_float, float_to_half>(dst, src, count, scaling);
    case DType::BFloat16: return scale_16bit<bfloat16_to_float, float_to_bfloat16>(dst, src, count, scaling);
    case DType::Int8: return scale_integer<int8_t>(dst, src, count, scaling);
    case DType::UInt8: return scale_integer<uint8_t>(dst, src, count, scaling);
    case DType::Int16: return scale_integer<int16_t>(dst, src, count, scaling);
    case DType::Int32: return scale_integer<int32_t>(dst, src, count, scaling);
    case DType::Int64: return scale_integer<int64_t>(dst, src, count, scaling);
  }
}

void scale(void* data, int64_t count, DType dtype, double factor) {
  scale_copy(data, data, count, dtype, factor);
}

}  // namespace ops
}  // namespace kolo
