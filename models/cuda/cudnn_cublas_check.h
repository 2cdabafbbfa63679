// Error checks for cuDNN and cuBLAS calls, the model layer's own libraries, in the format
// of KOLO_CUDA_CHECK (ops/cuda/cuda_check.h): the call, where it was made, and the
// library's message. A failure is a DeviceError, except that the library does not support
// what was asked (cuDNN's CUDNN_STATUS_NOT_SUPPORTED family, cuBLAS's
// CUBLAS_STATUS_NOT_SUPPORTED): Unsupported.
#pragma once

#include <cublas_v2.h>
#include <cudnn.h>

#include "ops/cuda/cuda_check.h"

namespace kolo::models::cuda {

inline void check_cudnn(cudnnStatus_t status, const char* call, const char* file, int line) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  const bool unsupported = CUDNN_STATUS_CATEGORY(status) == CUDNN_STATUS_NOT_SUPPORTED;
  ops::cuda::throw_library_error(unsupported ? StatusCode::Unsupported : StatusCode::DeviceError, "cuDNN", call, file,
                                 line, cudnnGetErrorString(status));
}
inline void check_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  const bool unsupported = status == CUBLAS_STATUS_NOT_SUPPORTED;
  ops::cuda::throw_library_error(unsupported ? StatusCode::Unsupported : StatusCode::DeviceError, "cuBLAS", call, file,
                                 line, cublasGetStatusString(status));
}

}  // namespace kolo::models::cuda

#define KOLO_CUDNN_CHECK(call) ::kolo::models::cuda::check_cudnn((call), #call, __FILE__, __LINE__)
#define KOLO_CUBLAS_CHECK(call) ::kolo::models::cuda::check_cublas((call), #call, __FILE__, __LINE__)
