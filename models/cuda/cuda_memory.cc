#include "models/cuda/cuda_memory.h"

#include <cstdio>

#include "ops/cuda/cuda_check.h"
#include "ops/cuda/device_guard.h"

namespace kolo::models::cuda {

void* CudaMemory::allocate(std::size_t bytes) {
  ops::cuda::DeviceGuard on(device_);
  void* p = nullptr;
  const cudaError_t status = cudaMalloc(&p, bytes);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // reset, so that a later cudaGetLastError() does not report it
    return nullptr;
  }
  KOLO_CUDA_CHECK(status);
  return p;
}

void CudaMemory::free(void* p) {
  ops::cuda::DeviceGuard on(device_);
  KOLO_CUDA_CHECK(cudaFree(p));
}

EventId CudaMemory::record(StreamId stream) {
  ops::cuda::DeviceGuard on(device_);
  cudaEvent_t event = nullptr;
  KOLO_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  KOLO_CUDA_CHECK(cudaEventRecord(event, reinterpret_cast<cudaStream_t>(stream)));
  return reinterpret_cast<EventId>(event);
}

bool CudaMemory::done(EventId event) {
  const cudaError_t status = cudaEventQuery(reinterpret_cast<cudaEvent_t>(event));
  if (status == cudaErrorNotReady) return false;
  KOLO_CUDA_CHECK(status);
  return true;
}

void CudaMemory::destroy(EventId event) { cudaEventDestroy(reinterpret_cast<cudaEvent_t>(event)); }

std::string CudaMemory::describe() {
  ops::cuda::DeviceGuard on(device_);
  std::size_t free_bytes = 0, total = 0;
  char text[96];
  if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) {
    cudaGetLastError();
    std::snprintf(text, sizeof text, "GPU %d", device_);
  } else {
    std::snprintf(text, sizeof text, "GPU %d (%.2f GiB free of %.2f GiB)", device_, double(free_bytes) / (1 << 30),
                  double(total) / (1 << 30));
  }
  return text;
}

}  // namespace kolo::models::cuda
