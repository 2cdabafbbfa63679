#include "backend.h"

#include <string>

#include "cpu/cpu_backend.h"
#include "models/cuda/gpu_runtime.h"

namespace kolo::models {

Backend& compute() {
  static cpu::CpuBackend backend;
  return backend;
}

Backend& compute(Device device) { return device.is_cpu() ? compute() : gpu_runtime().backend(device.index); }

}  // namespace kolo::models
