// Conversions between float32 and the reduced types (float16, bfloat16) that the cast
// kernels share (elementwise.cu, layout.cu): round to nearest even, as PyTorch's casts.
#pragma once

#include <string>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kolo/check.h"
#include "kolo/kolo.h"

namespace kolo::models::cuda::launch {

template <typename T>
__device__ T from_float(float v);
template <>
__device__ inline __half from_float<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

__device__ inline float to_float(float v) { return v; }
__device__ inline float to_float(__half v) { return __half2float(v); }
__device__ inline float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

inline void check_reduced(DType reduced) {
  KOLO_CHECK(reduced == DType::Float16 || reduced == DType::BFloat16, StatusCode::Internal,
             std::string("kolo: internal error: cast to ") + dtype_name(reduced));
}

}  // namespace kolo::models::cuda::launch
