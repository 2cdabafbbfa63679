#include "backend.h"

#include "cpu/cpu_backend.h"

namespace kolo::models {

Backend& compute() {
  static cpu::CpuBackend backend;
  return backend;
}

}  // namespace kolo::models
