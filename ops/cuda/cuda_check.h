// Error handling for CUDA calls: a failed call throws kolo::Error(CommFailure) naming the
// call and CUDA's message, and clears CUDA's sticky "last error" so that it does not
// resurface at an unrelated call.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "kolo/kolo.h"

namespace kolo::ops::cuda {

inline void check_cuda(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return;
  (void)cudaGetLastError();
  throw Error(StatusCode::CommFailure,
              std::string("kolo: CUDA error in ") + what + ": " + cudaGetErrorName(error) + " (" +
                  cudaGetErrorString(error) + ")");
}

// Makes `device` current on this thread for the guard's life (the caller's threads keep
// their own current device).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    check_cuda(cudaGetDevice(&previous_), "cudaGetDevice");
    if (previous_ != device) check_cuda(cudaSetDevice(device), "cudaSetDevice");
  }
  ~DeviceGuard() {
    int now = previous_;
    if (cudaGetDevice(&now) == cudaSuccess && now != previous_) (void)cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

}  // namespace kolo::ops::cuda
