// The GPU runtime of a build with CUDA: one DeviceContext and CudaKernels per device,
// created on first use.
#include <array>
#include <cmath>
#include <mutex>

#include "models/cuda/cuda_kernels.h"
#include "models/cuda/gpu_runtime.h"
#include "ops/cuda/device_guard.h"

namespace kolo::models {
namespace cuda {
namespace {

class CudaRuntime final : public GpuRuntime {
 public:
  int device_count() override {
    std::call_once(count_once_, [this] {
      if (cudaGetDeviceCount(&count_) != cudaSuccess) {
        cudaGetLastError();  // no driver or no device: not an error, just no GPU
        count_ = 0;
      }
    });
    return count_;
  }

  std::shared_ptr<void> allocate(int device, std::size_t bytes) override { return context(device).allocate(bytes); }

  void copy(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes) override {
    if (bytes == 0) return;
    if (dst_device.is_cpu()) return context(src_device.index).copy_to_host(dst, src, bytes);
    DeviceContext& to = context(dst_device.index);
    if (src_device.is_cpu()) return to.copy_to_device(dst, src, bytes);
    ops::cuda::DeviceGuard on(to.index());
    if (src_device.index == dst_device.index) {
      KOLO_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, to.stream()));
      return;
    }
    // Between two GPUs: after the source's pending writes, and finished before returning,
    // since the source's memory is ordered on the other device's stream only.
    context(src_device.index).synchronize(600);
    KOLO_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, to.stream()));
    to.synchronize(600);
  }

  std::shared_ptr<void> upload(int device, const void* host, std::size_t bytes) override {
    return context(device).upload(host, bytes);
  }

  void fill(int device, float* dst, int64_t count, float value) override {
    DeviceContext& c = context(device);
    ops::cuda::DeviceGuard on(c.index());
    if (value == 0.0f && !std::signbit(value))
      KOLO_CUDA_CHECK(cudaMemsetAsync(dst, 0, static_cast<std::size_t>(count) * sizeof(float), c.stream()));
    else
      launch::fill(c.stream(), count, dst, value);
  }

  Kernels& kernels(int device) override { return *slot(device).kernels; }
  void* stream(int device) override { return context(device).stream(); }
  void synchronize(int device, double timeout_seconds) override { context(device).synchronize(timeout_seconds); }

  GpuMemoryStats memory_stats(int device) override {
    const AllocatorStats s = context(device).allocator().stats();
    return {s.in_use_bytes, s.peak_in_use_bytes, s.reserved_bytes, s.peak_reserved_bytes, s.cached_bytes,
            s.device_allocations};
  }
  void reset_peak(int device) override { context(device).allocator().reset_peak(); }
  void release_cached(int device) override { context(device).allocator().release_cached(); }
  void set_precision(int device, DType dtype) override { context(device).precision = dtype; }
  DType precision(int device) override { return context(device).precision; }
  void set_allow_tf32(int device, bool allow) override { context(device).allow_tf32 = allow; }
  void set_channels_last(int device, ChannelsLast mode) override { context(device).channels_last = mode; }

 private:
  static constexpr int kMaxDevices = 64;
  struct Slot {
    std::once_flag once;
    DeviceContext* context = nullptr;  // never destroyed: memory may be freed during exit
    CudaKernels* kernels = nullptr;
  };

  Slot& slot(int device) {
    if (device < 0 || device >= device_count() || device >= kMaxDevices)
      throw Error(StatusCode::InvalidArgument, "kolo: there is no CUDA device " + std::to_string(device) + " (" +
                                                   std::to_string(device_count()) + " visible)");
    Slot& s = slots_[static_cast<std::size_t>(device)];
    std::call_once(s.once, [&] {
      s.context = new DeviceContext(device);
      s.kernels = new CudaKernels(*s.context);
    });
    return s;
  }
  DeviceContext& context(int device) { return *slot(device).context; }

  std::once_flag count_once_;
  int count_ = 0;
  std::array<Slot, kMaxDevices> slots_;
};

}  // namespace
}  // namespace cuda

GpuRuntime& gpu_runtime() {
  static cuda::CudaRuntime* runtime = new cuda::CudaRuntime;  // never destroyed, as its contexts
  return *runtime;
}

}  // namespace kolo::models
