// Error checks for CUDA calls. ops/ owns them, and models/cuda shares them through the
// kolo_cuda_plumbing target (docs/architecture.md, "Who owns the device").
//
// A failed call throws kolo::Error(DeviceError) naming the call and CUDA's message, and
// clears CUDA's "last error" so that it does not resurface at an unrelated call:
//
//   check_cuda(cudaMemcpyAsync(...), "cudaMemcpyAsync (to host)");   // a described call
//   KOLO_CUDA_CHECK(cudaStreamCreate(&stream));                       // the call as written, and where
//
// throw_library_error is the message's one format, for cuDNN's and cuBLAS's checks too
// (models/cuda/cudnn_cublas_check.h).
#pragma once

#include <cuda_runtime_api.h>

#include <string>
#include <string_view>

#include "kolo/kolo.h"

namespace kolo::ops::cuda {

// "cudaErrorInvalidValue (invalid argument)". Clears CUDA's last error.
inline std::string describe_cuda_error(cudaError_t error) {
  (void)cudaGetLastError();
  return std::string(cudaGetErrorName(error)) + " (" + cudaGetErrorString(error) + ")";
}

// A __FILE__ path from the top of kolo's tree ("models/cuda/conv_cudnn.cc"), whether the
// compiler was given it absolute (under KOLO_SOURCE_DIR, which kolo_cuda_plumbing defines)
// or relative to the build folder ("../models/cuda/conv_cudnn.cc", as ccache passes it).
inline std::string_view file_in_tree(std::string_view file) {
#ifdef KOLO_SOURCE_DIR
  constexpr std::string_view root = KOLO_SOURCE_DIR "/";
  if (file.substr(0, root.size()) == root) return file.substr(root.size());
#endif
  while (file.substr(0, 3) == "../" || file.substr(0, 2) == "./") file.remove_prefix(file.find('/') + 1);
  return file;
}

// Throws `code` with "kolo: <library> error in <call> (<file>:<line>): <problem>"; no
// "(<file>:<line>)" when `file` is null.
[[noreturn]] inline void throw_library_error(StatusCode code, const char* library, const char* call, const char* file,
                                             int line, const std::string& problem) {
  std::string where;
  if (file != nullptr) where = " (" + std::string(file_in_tree(file)) + ":" + std::to_string(line) + ")";
  throw Error(code, std::string("kolo: ") + library + " error in " + call + where + ": " + problem);
}

inline void check_cuda(cudaError_t error, const char* call, const char* file = nullptr, int line = 0) {
  if (error != cudaSuccess)
    throw_library_error(StatusCode::DeviceError, "CUDA", call, file, line, describe_cuda_error(error));
}

}  // namespace kolo::ops::cuda

#define KOLO_CUDA_CHECK(call) ::kolo::ops::cuda::check_cuda((call), #call, __FILE__, __LINE__)
