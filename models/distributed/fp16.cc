#include "models/distributed/fp16.h"

#include <bit>

namespace kolo::models::fp16 {

static_assert(sizeof(_Float16) == sizeof(uint16_t), "kolo: _Float16 must be IEEE binary16");

void compress(const float* in, int64_t count, double scale, uint16_t* out) {
  const float s = static_cast<float>(scale);
  if (s == 1.0f) {
    for (int64_t i = 0; i < count; ++i) out[i] = std::bit_cast<uint16_t>(static_cast<_Float16>(in[i]));
  } else {
    for (int64_t i = 0; i < count; ++i) out[i] = std::bit_cast<uint16_t>(static_cast<_Float16>(in[i] * s));
  }
}

void decompress(const uint16_t* in, int64_t count, float* out) {
  for (int64_t i = 0; i < count; ++i) out[i] = static_cast<float>(std::bit_cast<_Float16>(in[i]));
}

}  // namespace kolo::models::fp16
