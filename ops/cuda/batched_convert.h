// The GPU's element-wise kernels: one launch converts, scales or copies many tensors at
// once (the fusion buffer's copy-in and copy-out, compression's casts, zeros for a joined
// rank), instead of one cudaMemcpyAsync and one scaling kernel per tensor. Kept free of
// kolo's headers so that only this file goes through nvcc's front end.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace kolo::ops::cuda {

struct KernelPiece {
  void* dst;
  const void* src;  // nullptr: zeros
  int64_t count;    // elements
};

// Pieces per launch: the batch travels as a kernel parameter (at most 4 KiB).
constexpr int kMaxPiecesPerLaunch = 64;

// dst = to(from(src) * factor) for every piece; `from` and `to` are kolo::DType values
// (both floating point, or equal). Math is in float, or in double from float64 to float64
// and for integers, and rounds to nearest even (integers: toward zero, saturating), as
// ops::convert_on_cpu does.
cudaError_t launch_convert(const KernelPiece* pieces, int count, int from, int to, double factor,
                           cudaStream_t stream);

}  // namespace kolo::ops::cuda
