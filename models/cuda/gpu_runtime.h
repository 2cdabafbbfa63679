// What tensors and layers need from GPUs besides their Kernels: memory, copies and
// fills, ordered on each device's compute stream. models/cuda/cuda_runtime.cc implements
// it; in a build whose model layer has no CUDA, gpu_runtime() is a stand-in
// (models/cuda/gpu_runtime.cc) that has no devices and throws kolo::Error(Unsupported) for
// anything else.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "kolo/models.h"
#include "models/kernels.h"

namespace kolo::models {

class GpuRuntime {
 public:
  virtual ~GpuRuntime() = default;
  virtual int device_count() = 0;
  // `bytes` on GPU `device` from its caching allocator, back to the cache with the last
  // reference. The memory is stream-ordered: free once the work enqueued so far has used it.
  virtual std::shared_ptr<void> allocate(int device, std::size_t bytes) = 0;
  // Between host and GPU memory or within a GPU. To the host: returns once the data is
  // there. From the host: staged through pinned memory, so the source may change at once.
  virtual void copy(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes) = 0;
  // The bytes of `host` in new memory on `device`, uploaded on its copy stream through
  // pinned buffers: the compute stream waits for the upload, the host does not.
  virtual std::shared_ptr<void> upload(int device, const void* host, std::size_t bytes) = 0;
  virtual void fill(int device, float* dst, int64_t count, float value) = 0;
  virtual Kernels& kernels(int device) = 0;
  virtual void* stream(int device) = 0;
  virtual void synchronize(int device, double timeout_seconds) = 0;
  virtual GpuMemoryStats memory_stats(int device) = 0;
  virtual void reset_peak(int device) = 0;
  virtual void release_cached(int device) = 0;
  virtual void set_precision(int device, DType dtype) = 0;
  virtual DType precision(int device) = 0;
  virtual void set_allow_tf32(int device, bool allow) = 0;
  virtual void set_channels_last(int device, ChannelsLast mode) = 0;
};

GpuRuntime& gpu_runtime();

// "cpu", "cuda:0".
std::string device_name(Device device);
// Throws kolo::Error unless `t` is on `device`: "kolo: <what> is on cuda:0 but <where>".
void check_device(const Tensor& t, Device device, const std::string& what, const std::string& where);

}  // namespace kolo::models
