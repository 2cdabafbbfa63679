// Which Kernels implementation serves a device.
#include "models/kernels.h"

#include "models/cpu/cpu_kernels.h"
#include "models/cuda/gpu_runtime.h"

namespace kolo::models {

Kernels& cpu_kernels() {
  static cpu::CpuKernels kernels;
  return kernels;
}

Kernels& kernels(Device device) { return device.is_cpu() ? cpu_kernels() : gpu_runtime().kernels(device.index); }

}  // namespace kolo::models
