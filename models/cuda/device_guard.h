// Makes a device current for a scope and restores the previous one: kolo's calls must not
// change which device the caller's own CUDA code runs on.
#pragma once

#include <cuda_runtime_api.h>

#include "models/cuda/cuda_check.h"

namespace kolo::models::cuda {

class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    KOLO_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device) KOLO_CUDA_CHECK(cudaSetDevice(device));
    else previous_ = -1;
  }
  ~DeviceGuard() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

}  // namespace kolo::models::cuda
