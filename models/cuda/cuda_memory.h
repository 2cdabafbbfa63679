// The CUDA side of the caching allocator: cudaMalloc/cudaFree and events on one device.
#pragma once

#include "models/cuda/caching_allocator.h"

namespace kolo::models::cuda {

class CudaMemory final : public DeviceMemory {
 public:
  explicit CudaMemory(int device) : device_(device) {}
  void* allocate(std::size_t bytes) override;  // nullptr when the device is out of memory
  void free(void* p) override;
  EventId record(StreamId stream) override;
  bool done(EventId event) override;
  void destroy(EventId event) override;
  std::string describe() override;

 private:
  int device_;
};

}  // namespace kolo::models::cuda
