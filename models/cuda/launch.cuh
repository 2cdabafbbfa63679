// What the .cu files share: grid sizes, the grid-stride loop, and the launch check.
#pragma once

#include <algorithm>
#include <cstdint>

#include <cuda_runtime.h>

#include "ops/cuda/cuda_check.h"

namespace kolo::models::cuda::launch {

constexpr int kThreads = 256;

// Blocks for a grid-stride loop over `count` elements: enough to fill the GPU, never more
// than there is work for.
inline unsigned blocks_for(int64_t count, int threads = kThreads) {
  const int64_t blocks = (count + threads - 1) / threads;
  return static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, 65536));
}

// i / d and i % d for a divisor fixed per launch, in 32 bits when every dividend fits (as
// it does below 2^32 elements): a 64-bit division costs tens of instructions per element,
// more than the memory access of the kernels that need one.
struct Divisor {
  Divisor(int64_t divisor, int64_t max_dividend)
      : d(divisor), d32(static_cast<uint32_t>(divisor)), narrow(max_dividend <= int64_t{UINT32_MAX}) {}
  __device__ int64_t div(int64_t i) const { return narrow ? int64_t(uint32_t(i) / d32) : i / d; }
  __device__ int64_t mod(int64_t i) const { return narrow ? int64_t(uint32_t(i) % d32) : i % d; }
  int64_t d;
  uint32_t d32;
  bool narrow;
};

}  // namespace kolo::models::cuda::launch

// for (i = this thread's first element; i < count; i += all threads)
#define KOLO_GRID_LOOP(i, count)                                                               \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (count); \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)

// After a <<<...>>> launch: a bad configuration shows here, not at the next sync.
#define KOLO_CHECK_LAUNCH() KOLO_CUDA_CHECK(cudaGetLastError())
