// Error checks for cuBLAS and cuDNN calls, as KOLO_CUDA_CHECK for CUDA's.
#pragma once

#include <cublas_v2.h>
#include <cudnn.h>

#include "models/cuda/cuda_check.h"

namespace kolo::models::cuda {

inline void check_cudnn(cudnnStatus_t status, const char* call, const char* file, int line) {
  if (status != CUDNN_STATUS_SUCCESS) fail("cuDNN", call, file, line, cudnnGetErrorString(status));
}
inline void check_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS) fail("cuBLAS", call, file, line, cublasGetStatusString(status));
}

}  // namespace kolo::models::cuda

#define KOLO_CUDNN_CHECK(call) ::kolo::models::cuda::check_cudnn((call), #call, __FILE__, __LINE__)
#define KOLO_CUBLAS_CHECK(call) ::kolo::models::cuda::check_cublas((call), #call, __FILE__, __LINE__)
