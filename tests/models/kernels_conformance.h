// What the Kernels conformance tests share (kernels_conformance_*_test.cc). Each test is one
// body per Kernels method (models/kernels.h), run once per implementation the build has:
//
//   const Device device = GENERATE(kernel_devices());
//   if (!present(device)) return;
//   conform(device, run, {{"y", reference_y, {to_reference, to_cpu}}, ...});
//
// `run(d)` calls the method on device d with the test's inputs (copied there) and returns
// its outputs copied back to the host. On the CPU they are held to a double-precision
// reference written in the test (independent of models/cpu/); on a GPU to the CPU kernels'
// outputs for the same inputs. Bounds are relative L2 errors, 0 meaning bit for bit.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kolo/models.h"
#include "random_tensors.h"
#include "models/kernels.h"

namespace kolo::models::conformance {

// Every implementation a build can have: the CPU's, and the GPU's (CUDA device 0).
inline Catch::Generators::GeneratorWrapper<Device> kernel_devices() {
  return Catch::Generators::values({Device::cpu(), Device::cuda(0)});
}

// Whether `device`'s kernels can run here; says why not (once per test) where they cannot.
inline bool present(Device device) {
  if (device.is_cpu() || cuda_device_count() > device.index) return true;
  WARN("skipped on cuda:" << device.index
                          << ": no CUDA device visible (or kolo was built without CUDA); the GPU's kernels were not "
                             "checked");
  return false;
}

// A host tensor on `device` (a copy: in-place kernels must not change the test's inputs).
inline Tensor copy_to(const Tensor& t, Device device) { return t.clone().to(device); }

using test::integer_tensor;
using test::random_tensor;

// A tensor's values on the host, as doubles (exact).
inline std::vector<double> values(const Tensor& t) {
  const Tensor host = t.cpu();
  return std::vector<double>(host.data(), host.data() + host.numel());
}
inline std::vector<double> values(const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); }

// Outputs of one run, by name.
using Outputs = std::map<std::string, std::vector<double>>;

struct Bound {
  double to_reference;  // the CPU's outputs against the double reference
  double to_cpu;        // another device's outputs against the CPU's
};

struct Expected {
  std::string name;
  std::vector<double> reference;
  Bound bound;
};

// ‖got − want‖ / ‖want‖ (‖got − want‖ where want is all zeros).
inline double relative_l2(const std::vector<double>& got, const std::vector<double>& want) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double d = got[i] - want[i];
    diff += d * d;
    norm += want[i] * want[i];
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

// Bit for bit as float32 (NaN equal to NaN): what a bound of 0 asks for.
inline bool identical_floats(const std::vector<double>& got, const std::vector<double>& want) {
  for (std::size_t i = 0; i < want.size(); ++i) {
    const float g = static_cast<float>(got[i]), w = static_cast<float>(want[i]);
    if (!(g == w && std::signbit(g) == std::signbit(w)) && !(std::isnan(g) && std::isnan(w))) return false;
  }
  return true;
}

inline void check_close(const std::string& what, const std::vector<double>& got, const std::vector<double>& want,
                        double bound) {
  INFO(what);
  REQUIRE(got.size() == want.size());
  if (bound == 0) {
    CHECK(identical_floats(got, want));
  } else {
    const double error = relative_l2(got, want);
    INFO("relative L2 error " << error << ", bound " << bound);
    CHECK(error <= bound);
  }
}

// The check every conformance test ends with (see the top of this file).
inline void conform(Device device, const std::function<Outputs(Device)>& run, const std::vector<Expected>& expected) {
  const Outputs got = run(device);
  if (device.is_cpu()) {
    for (const Expected& e : expected) check_close(e.name + " against the reference", got.at(e.name), e.reference,
                                                   e.bound.to_reference);
    return;
  }
  const Outputs cpu = run(Device::cpu());
  for (const Expected& e : expected)
    check_close(e.name + " on cuda:" + std::to_string(device.index) + " against the CPU's", got.at(e.name),
                cpu.at(e.name), e.bound.to_cpu);
}

// Strict float32 (no TF32) for a GPU's convolutions and matrix products while it lives:
// the CPU computes in float32, and TF32's 10-bit products would swamp the bounds.
struct StrictFloat32 {
  explicit StrictFloat32(Device device) : device_(device) {
    if (device_.is_cpu()) return;
    set_allow_tf32(device_, false);
    set_compute_precision(device_, DType::Float32);
  }
  ~StrictFloat32() {
    if (!device_.is_cpu()) set_allow_tf32(device_, true);
  }
  Device device_;
};

}  // namespace kolo::models::conformance
