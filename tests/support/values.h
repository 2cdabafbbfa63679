// Test-side reference code, written independently of kolo's own kernels: IEEE half and
// bfloat16 encoding/decoding by arithmetic (ldexp/frexp, not bit tricks), round-to-
// nearest-even references, and a typed buffer that stores "logical" double values in any
// kolo dtype so that expected results can be computed in closed form.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "kolo/kolo.h"

namespace kolo_test {

inline const std::vector<kolo::DType>& all_dtypes() {
  static const std::vector<kolo::DType> d = {
      kolo::DType::Float32, kolo::DType::Float64, kolo::DType::Float16, kolo::DType::BFloat16,
      kolo::DType::Int8,    kolo::DType::UInt8,   kolo::DType::Int16,   kolo::DType::Int32,
      kolo::DType::Int64};
  return d;
}

inline const std::vector<kolo::ReduceOp>& all_ops() {
  static const std::vector<kolo::ReduceOp> o = {kolo::ReduceOp::Sum, kolo::ReduceOp::Average,
                                                kolo::ReduceOp::Min, kolo::ReduceOp::Max,
                                                kolo::ReduceOp::Product};
  return o;
}

inline bool floating(kolo::DType d) {
  return d == kolo::DType::Float32 || d == kolo::DType::Float64 || d == kolo::DType::Float16 ||
         d == kolo::DType::BFloat16;
}

inline std::size_t element_size(kolo::DType d) {
  switch (d) {
    case kolo::DType::Float64:
    case kolo::DType::Int64: return 8;
    case kolo::DType::Float32:
    case kolo::DType::Int32: return 4;
    case kolo::DType::Float16:
    case kolo::DType::BFloat16:
    case kolo::DType::Int16: return 2;
    default: return 1;
  }
}

// ---- 16-bit floats by arithmetic -----------------------------------------------------

inline double half_bits_to_double(uint16_t h) {
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v;
  if (e == 0x1f) v = m ? NAN : INFINITY;
  else if (e == 0) v = std::ldexp(double(m), -24);             // subnormal: m * 2^-24
  else v = std::ldexp(double(1024 + m), e - 25);               // (1 + m/1024) * 2^(e-15)
  return (h & 0x8000) ? -v : v;
}

inline double bf16_bits_to_double(uint16_t b) {
  const int e = (b >> 7) & 0xff, m = b & 0x7f;
  double v;
  if (e == 0xff) v = m ? NAN : INFINITY;
  else if (e == 0) v = std::ldexp(double(m), -133);            // m * 2^(-126-7)
  else v = std::ldexp(double(128 + m), e - 134);               // (1 + m/128) * 2^(e-127)
  return (b & 0x8000) ? -v : v;
}

// Bits of a value that a 16-bit format holds exactly; throws if it does not.
// mant_bits: 10 (half) or 7 (bfloat16); bias: 15 or 127; max_e: 30 or 254.
inline uint16_t exact_bits16(double v, int mant_bits, int bias, int max_e, const char* what) {
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  const double a = std::fabs(v);
  if (std::isinf(a)) return static_cast<uint16_t>(sign | ((max_e + 1) << mant_bits));
  if (a == 0) return sign;
  int e2 = 0;
  std::frexp(a, &e2);  // a = f * 2^e2, f in [0.5, 1)
  const int biased = e2 - 1 + bias;
  double m;
  uint16_t bits;
  if (biased <= 0) {  // subnormal: a = m * 2^(1 - bias - mant_bits)
    m = std::ldexp(a, bias - 1 + mant_bits);
    bits = 0;
  } else {
    if (biased > max_e) throw std::logic_error(std::string(what) + ": value overflows");
    m = (std::ldexp(a, -(e2 - 1)) - 1.0) * std::ldexp(1.0, mant_bits);
    bits = static_cast<uint16_t>(biased << mant_bits);
  }
  if (m != std::floor(m) || m >= std::ldexp(1.0, mant_bits))
    throw std::logic_error(std::string(what) + ": " + std::to_string(v) + " is not exact");
  return static_cast<uint16_t>(sign | bits | static_cast<uint16_t>(m));
}

inline uint16_t half_bits_exact(double v) { return exact_bits16(v, 10, 15, 30, "float16"); }
inline uint16_t bf16_bits_exact(double v) { return exact_bits16(v, 7, 127, 254, "bfloat16"); }

// Round-to-nearest-even reference: scale to an integer count of ulps in double (exact,
// since a float has 24 significant bits), round with nearbyint (ties to even), rebuild.
inline uint16_t nearest_bits16(float f, int mant_bits, int bias, int max_e, double overflow_at,
                               const char* what) {
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  if (std::isnan(f)) return static_cast<uint16_t>(sign | ((max_e + 1) << mant_bits) | 1);
  const double a = std::fabs(double(f));
  if (a >= overflow_at) return static_cast<uint16_t>(sign | ((max_e + 1) << mant_bits));
  int e = a == 0 ? 1 - bias : std::ilogb(a);
  if (e < 1 - bias) e = 1 - bias;
  const double ulp = std::ldexp(1.0, e - mant_bits);
  const double q = std::nearbyint(a / ulp);
  return static_cast<uint16_t>(sign | exact_bits16(q * ulp, mant_bits, bias, max_e, what));
}

inline uint16_t half_bits_nearest(float f) {
  return nearest_bits16(f, 10, 15, 30, 65520.0, "float16");  // 65504 + half an ulp (16)
}
inline uint16_t bf16_bits_nearest(float f) {
  return nearest_bits16(f, 7, 127, 254, std::ldexp(2.0 - std::ldexp(1.0, -8), 127), "bfloat16");
}

// ---- a tensor of any dtype holding logical double values ----------------------------------

class Buffer {
 public:
  Buffer() = default;
  Buffer(kolo::DType dtype, std::vector<int64_t> shape) : dtype_(dtype), shape_(std::move(shape)) {
    count_ = 1;
    for (int64_t d : shape_) count_ *= d;
    bytes_.assign(static_cast<std::size_t>(count_) * element_size(dtype_), std::byte{0});
  }

  kolo::DType dtype() const { return dtype_; }
  int64_t count() const { return count_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  void* data() { return bytes_.empty() ? nullptr : bytes_.data(); }
  const std::vector<std::byte>& bytes() const { return bytes_; }
  kolo::TensorView view() { return kolo::TensorView{data(), dtype_, shape_, kolo::Device::cpu()}; }

  // Stores v exactly (throws if the dtype cannot hold it).
  void set(int64_t i, double v) {
    void* p = bytes_.data() + i * element_size(dtype_);
    switch (dtype_) {
      case kolo::DType::Float32: store<float>(p, v); break;
      case kolo::DType::Float64: store<double>(p, v); break;
      case kolo::DType::Int8: store<int8_t>(p, v); break;
      case kolo::DType::UInt8: store<uint8_t>(p, v); break;
      case kolo::DType::Int16: store<int16_t>(p, v); break;
      case kolo::DType::Int32: store<int32_t>(p, v); break;
      case kolo::DType::Int64: store<int64_t>(p, v); break;
      case kolo::DType::Float16: {
        const uint16_t b = half_bits_exact(v);
        std::memcpy(p, &b, 2);
        break;
      }
      case kolo::DType::BFloat16: {
        const uint16_t b = bf16_bits_exact(v);
        std::memcpy(p, &b, 2);
        break;
      }
    }
  }

  double get(int64_t i) const {
    const void* p = bytes_.data() + i * element_size(dtype_);
    switch (dtype_) {
      case kolo::DType::Float32: return load<float>(p);
      case kolo::DType::Float64: return load<double>(p);
      case kolo::DType::Int8: return load<int8_t>(p);
      case kolo::DType::UInt8: return load<uint8_t>(p);
      case kolo::DType::Int16: return load<int16_t>(p);
      case kolo::DType::Int32: return load<int32_t>(p);
      case kolo::DType::Int64: return static_cast<double>(load<int64_t>(p));
      case kolo::DType::Float16: return half_bits_to_double(load<uint16_t>(p));
      case kolo::DType::BFloat16: return bf16_bits_to_double(load<uint16_t>(p));
    }
    return NAN;
  }

 private:
  template <typename T>
  static void store(void* p, double v) {
    const T x = static_cast<T>(v);
    if (static_cast<double>(x) != v)
      throw std::logic_error("test value " + std::to_string(v) + " does not fit the dtype");
    std::memcpy(p, &x, sizeof x);
  }
  template <typename T>
  static double load(const void* p) {
    T x;
    std::memcpy(&x, p, sizeof x);
    return static_cast<double>(x);
  }

  kolo::DType dtype_ = kolo::DType::Float32;
  std::vector<int64_t> shape_;
  int64_t count_ = 0;
  std::vector<std::byte> bytes_;
};

// Relative tolerance of one rounding step (plus a little) for results that are not exact.
inline double rounding_tolerance(kolo::DType d) {
  switch (d) {
    case kolo::DType::Float16: return 2e-3;
    case kolo::DType::BFloat16: return 1e-2;
    case kolo::DType::Float32: return 1e-6;
    case kolo::DType::Float64: return 1e-13;
    default: return 0;
  }
}

}  // namespace kolo_test
