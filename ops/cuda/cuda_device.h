// CUDA implementations of the device interfaces: events, the DeviceOps of one GPU (kolo's
// own high-priority, non-blocking stream and the batched kernels), and the pinned-memory
// copier of the host-staged path.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>

#include "ops/device.h"
#include "ops/staged_backend.h"

namespace kolo::ops::cuda {

// Queried only by kolo's own threads (the background thread, the completion watcher):
// query() makes the event's device current on the calling thread.
class CudaEvent final : public Event {
 public:
  CudaEvent();  // on the current device
  ~CudaEvent() override;
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  void record(cudaStream_t stream);
  bool query() override;
  void block_stream(void* stream) override;

 private:
  cudaEvent_t event_ = nullptr;
  int device_ = 0;  // current when it was created
};

// A new event recorded on `stream` (of the current device).
std::shared_ptr<CudaEvent> record_event(cudaStream_t stream);

// Sets `device` current on the calling (background) thread, which then works on it.
std::unique_ptr<DeviceOps> make_cuda_ops(int device);
std::unique_ptr<StagingCopier> make_cuda_copier(DeviceOps& ops);

}  // namespace kolo::ops::cuda
