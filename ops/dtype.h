// Element-wise kernels over raw buffers of any kolo dtype: the reductions a backend
// needs for types MPI lacks (float16, bfloat16), and the scaling used by average,
// prescale and postscale. CPU memory only.
#pragma once

#include <cstdint>

#include "kolo/kolo.h"

namespace kolo::ops {

float half_to_float(uint16_t h);
uint16_t float_to_half(float f);  // round to nearest even; overflow -> inf
float bfloat16_to_float(uint16_t b);
uint16_t float_to_bfloat16(float f);  // round to nearest even; NaN stays NaN

// out[i] = a[i] (op) b[i]; out may be a or b. op is Sum, Min, Max or Product (Average is
// a Sum followed by scale(); Adasum is not element-wise and throws Internal: ops/adasum.h).
void reduce(void* out, const void* a, const void* b, int64_t count, DType dtype, ReduceOp op);
void reduce_into(void* inout, const void* in, int64_t count, DType dtype, ReduceOp op);  // reduce(inout, inout, in)

// out = ((a * a_factor) op (b * b_factor)) * factor, with the bits of scale_copy() of each
// operand, reduce(), then scale(). A float sum does it all in one pass, so that a scaled
// reduction (an average, a prescale, a postscale) costs what a plain one does. out may be
// a or b.
void reduce_scaled(void* out, const void* a, const void* b, int64_t count, DType dtype, ReduceOp op,
                   double factor, double a_factor = 1.0, double b_factor = 1.0);

// data[i] *= factor. A factor of exactly 1/n (an average) divides by n instead, correctly
// rounded; any other factor multiplies in float for float32 and the 16-bit floats and in
// double for float64 and integers (Horovod's arithmetic). Integers are truncated toward
// zero and saturate at their type's limits.
void scale(void* data, int64_t count, DType dtype, double factor);

// dst[i] = src[i] * factor (dst may equal src).
void scale_copy(void* dst, const void* src, int64_t count, DType dtype, double factor);

}  // namespace kolo::ops
