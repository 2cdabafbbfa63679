// What the .cu files share: grid sizes, the grid-stride loop, and the launch check.
#pragma once

#include <algorithm>
#include <cstdint>

#include <cuda_runtime.h>

#include "models/cuda/cuda_check.h"

namespace kolo::models::cuda::kernels {

constexpr int kThreads = 256;

// Blocks for a grid-stride loop over `count` elements: enough to fill the GPU, never more
// than there is work for.
inline unsigned blocks_for(int64_t count, int threads = kThreads) {
  const int64_t blocks = (count + threads - 1) / threads;
  return static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, 65536));
}

}  // namespace kolo::models::cuda::kernels

// for (i = this thread's first element; i < count; i += all threads)
#define KOLO_GRID_LOOP(i, count)                                                               \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (count); \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)

// After a <<<...>>> launch: a bad configuration shows here, not at the next sync.
#define KOLO_CHECK_LAUNCH() KOLO_CUDA_CHECK(cudaGetLastError())
