// Makes a device current on this thread for a scope, then restores the one that was: kolo's
// calls must not change which device the caller's own CUDA code runs on. ops/ owns it;
// models/cuda shares it through kolo_cuda_plumbing (see cuda_check.h).
#pragma once

#include <cuda_runtime_api.h>

#include "ops/cuda/cuda_check.h"

namespace kolo::ops::cuda {

class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    check_cuda(cudaGetDevice(&previous_), "cudaGetDevice");
    if (previous_ == device) previous_ = -1;  // nothing to restore
    else check_cuda(cudaSetDevice(device), "cudaSetDevice");
  }
  ~DeviceGuard() {
    if (previous_ >= 0) (void)cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

}  // namespace kolo::ops::cuda
