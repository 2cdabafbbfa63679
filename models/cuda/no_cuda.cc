// The GPU runtime of a build without CUDA: no devices; anything that needs one fails with
// a message that says why.
#include "models/cuda/gpu_runtime.h"

namespace kolo::models {
namespace {

class NoGpu final : public GpuRuntime {
 public:
  int device_count() override { return 0; }
  std::shared_ptr<void> allocate(int, std::size_t) override { fail(); }
  void copy(void*, Device, const void*, Device, std::size_t) override { fail(); }
  std::shared_ptr<void> upload(int, const void*, std::size_t) override { fail(); }
  void fill(int, float*, int64_t, float) override { fail(); }
  Backend& backend(int) override { fail(); }
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
    throw Error(StatusCode::InvalidArgument,
                "kolo: this build of kolo has no CUDA support (configured with KOLO_CUDA=OFF, or no CUDA "
                "toolkit was found): tensors cannot be placed on a GPU");
  }
};

}  // namespace

GpuRuntime& gpu_runtime() {
  static NoGpu none;
  return none;
}

}  // namespace kolo::models
