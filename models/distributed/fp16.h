// float32 <-> float16 for Compression::FP16 (private to models/distributed). The model
// layer may not use ops/' converters, and the compiler's _Float16 does the IEEE rounding
// (to nearest, ties to even; overflow to infinity) in hardware where the CPU has F16C.
#pragma once

#include <cstdint>

namespace kolo::models::fp16 {

// out[i] = float16(in[i] * scale). Scaling before the cast (rather than letting the
// runtime prescale the float16 values) rounds once instead of twice, and keeps a large
// accumulated gradient from overflowing float16 before it is divided.
void compress(const float* in, int64_t count, double scale, uint16_t* out);
// out[i] = float32(in[i]), exact.
void decompress(const uint16_t* in, int64_t count, float* out);

}  // namespace kolo::models::fp16
