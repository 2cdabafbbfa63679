// Error checks for CUDA, cuBLAS and cuDNN calls: a failing call throws kolo::Error naming
// the call, where it was made, and the library's own message.
#pragma once

#include <string>

#include <cuda_runtime_api.h>

#include "kolo/kolo.h"

namespace kolo::models::cuda {

[[noreturn]] void fail(const std::string& library, const char* call, const char* file, int line,
                       const std::string& message);

inline void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess) fail("CUDA", call, file, line, cudaGetErrorString(status));
}

}  // namespace kolo::models::cuda

#define KOLO_CUDA_CHECK(call) ::kolo::models::cuda::check_cuda((call), #call, __FILE__, __LINE__)
