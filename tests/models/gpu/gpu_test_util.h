// What the GPU tests share: the device, random CPU tensors, and distances between a GPU
// result and the CPU kernels'.
#pragma once

#include <cmath>
#include <vector>

#include "kolo/models.h"
#include "../random_tensors.h"

namespace kolo::models::gpu_test {

inline const Device kGpu = Device::cuda(0);

using test::integer_tensor;
using test::random_tensor;

// ‖got − want‖ / ‖want‖ (got on any device, want on the CPU).
inline double rel_l2(const Tensor& got, const Tensor& want) {
  const Tensor g = got.cpu();
  if (g.numel() != want.numel()) return INFINITY;
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double d = double(g[i]) - double(want[i]);
    diff += d * d;
    norm += double(want[i]) * double(want[i]);
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

inline bool identical(const Tensor& got, const Tensor& want) {
  const Tensor g = got.cpu();
  if (g.numel() != want.numel()) return false;
  for (int64_t i = 0; i < want.numel(); ++i)
    if (!(g[i] == want[i]) && !(std::isnan(g[i]) && std::isnan(want[i]))) return false;
  return true;
}

// Strict float32 (no TF32) on the GPU for the duration of a test.
struct StrictFloat32 {
  StrictFloat32() {
    set_allow_tf32(kGpu, false);
    set_compute_precision(kGpu, DType::Float32);
  }
  ~StrictFloat32() { set_allow_tf32(kGpu, true); }
};

}  // namespace kolo::models::gpu_test
