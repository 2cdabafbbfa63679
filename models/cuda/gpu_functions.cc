// The public GPU functions of kolo/models/gpu.h, on the GPU runtime (gpu_runtime.h), and
// Module::to.
#include "kolo/models.h"
#include "models/cuda/gpu_runtime.h"

namespace kolo::models {
namespace {
int gpu_index(Device device, const char* function) {
  if (device.kind != Device::Kind::CUDA)
    throw Error(StatusCode::InvalidArgument, std::string("kolo: ") + function + " needs a CUDA device, got " +
                                                 device_name(device));
  return device.index;
}
}  // namespace

int cuda_device_count() { return gpu_runtime().device_count(); }

void* compute_stream(Device device) { return gpu_runtime().stream(gpu_index(device, "compute_stream")); }

void synchronize(Device device, double timeout_seconds) {
  if (device.is_cpu()) return;
  gpu_runtime().synchronize(gpu_index(device, "synchronize"), timeout_seconds);
}

GpuMemoryStats gpu_memory_stats(Device device) {
  return gpu_runtime().memory_stats(gpu_index(device, "gpu_memory_stats"));
}
void reset_peak_gpu_memory(Device device) { gpu_runtime().reset_peak(gpu_index(device, "reset_peak_gpu_memory")); }
void release_cached_gpu_memory(Device device) {
  gpu_runtime().release_cached(gpu_index(device, "release_cached_gpu_memory"));
}

void set_compute_precision(Device device, DType dtype) {
  const int index = gpu_index(device, "set_compute_precision");
  if (dtype != DType::Float32 && dtype != DType::Float16 && dtype != DType::BFloat16)
    throw Error(StatusCode::InvalidArgument, std::string("kolo: set_compute_precision: ") + dtype_name(dtype) +
                                                 " is not float32, float16 or bfloat16");
  gpu_runtime().set_precision(index, dtype);
}
DType compute_precision(Device device) { return gpu_runtime().precision(gpu_index(device, "compute_precision")); }
void set_allow_tf32(Device device, bool allow) { gpu_runtime().set_allow_tf32(gpu_index(device, "set_allow_tf32"), allow); }
void set_channels_last(Device device, ChannelsLast mode) {
  gpu_runtime().set_channels_last(gpu_index(device, "set_channels_last"), mode);
}

void Module::to(Device device) {
  for (Parameter* p : parameters()) {
    p->value = p->value.to(device);
    p->grad = p->grad.to(device);
  }
  for (auto& [name, buffer] : buffers()) *buffer = buffer->to(device);
}

}  // namespace kolo::models
