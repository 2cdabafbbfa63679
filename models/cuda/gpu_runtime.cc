// gpu_runtime.h's functions in every build: device names and checks, and the GPU runtime of
// a build whose model layer has no CUDA (cuda_runtime.cc has the one with CUDA): no devices,
// and anything that needs one fails with a message that says why.
#include "models/cuda/gpu_runtime.h"

namespace kolo::models {

std::string device_name(Device device) {
  return device.is_cpu() ? std::string("cpu") : "cuda:" + std::to_string(device.index);
}

void check_device(const Tensor& t, Device device, const std::string& what, const std::string& where) {
  if (!(t.device() == device))
    throw Error(StatusCode::InvalidArgument,
                "kolo: " + what + " is on " + device_name(t.device()) + " but " + where + " is on " + device_name(device));
}

#ifndef KOLO_MODELS_WITH_CUDA
namespace {

class NoGpu final : public GpuRuntime {
 public:
  int device_count() override { return 0; }
  std::shared_ptr<void> allocate(int, std::size_t) override { fail(); }
  void copy(void*, Device, const void*, Device, std::size_t) override { fail(); }
  std::shared_ptr<void> upload(int, const void*, std::size_t) override { fail(); }
  void fill(int, float*, int64_t, float) override { fail(); }
  Kernels& kernels(int) override { fail(); }
  void* stream(int) override { fail(); }
  void synchronize(int, double) override { fail(); }
  GpuMemoryStats memory_stats(int) override { fail(); }
  void reset_peak(int) override { fail(); }
  void release_cached(int) override { fail(); }
  void set_precision(int, DType) override { fail(); }
  DType precision(int) override { fail(); }
  void set_allow_tf32(int, bool) override { fail(); }
  void set_channels_last(int, ChannelsLast) override { fail(); }

 private:
  [[noreturn]] static void fail() {
    throw Error(StatusCode::Unsupported,
                "kolo: this build of kolo has no CUDA support for models (configured with KOLO_CUDA=OFF, or CMake "
                "found no CUDA toolkit, nvcc or cuDNN 9): tensors cannot be placed on a GPU");
  }
};

}  // namespace

GpuRuntime& gpu_runtime() {
  static NoGpu none;
  return none;
}
#endif

}  // namespace kolo::models
