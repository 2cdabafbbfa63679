// Everything kolo holds for one GPU: its compute stream (all the model layer's work, in
// order), a copy stream for uploads, the caching allocator, cuDNN and cuBLAS handles bound
// to the compute stream, pinned staging buffers, and the compute precision. Created on
// first use and never destroyed: tensors freed during exit still return their memory.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "kolo/kolo.h"
#include "kolo/models/gpu.h"
#include "models/cuda/caching_allocator.h"
#include "models/cuda/cuda_memory.h"

namespace kolo::models::cuda {

// Polls `event` until reached (spinning briefly, then sleeping: never a device-wide sync).
// Throws kolo::Error naming `what` on a device error or after `timeout_seconds`.
void wait_for(cudaEvent_t event, double timeout_seconds, const char* what);

class DeviceContext {
 public:
  explicit DeviceContext(int index);
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;

  int index() const { return index_; }
  cudaStream_t stream() const { return stream_; }
  cudnnHandle_t cudnn() const { return cudnn_; }
  cublasHandle_t cublas() const { return cublas_; }
  CachingAllocator& allocator() { return allocator_; }

  // Memory for work on the compute stream, back to the cache with the last reference.
  std::shared_ptr<void> allocate(std::size_t bytes);
  // The bytes of `host` in new device memory, uploaded through pinned buffers on the copy
  // stream; the compute stream waits for the upload (the host does not), and the memory is
  // not reused before the compute stream's work on it is done.
  std::shared_ptr<void> upload(const void* host, std::size_t bytes);
  // host -> existing device memory, on the compute stream (through pinned buffers).
  void copy_to_device(void* device_dst, const void* host, std::size_t bytes);
  // device -> host once the compute stream's work so far is done (bounded wait).
  void copy_to_host(void* host, const void* device_src, std::size_t bytes);
  // Waits for the compute stream's work so far.
  void synchronize(double timeout_seconds);

  std::atomic<DType> precision{DType::Float32};
  std::atomic<bool> allow_tf32{true};  // for cuDNN convolutions in float32, as PyTorch's default
  std::atomic<ChannelsLast> channels_last{ChannelsLast::Auto};  // for float16/bfloat16 convolutions

 private:
  // Pinned host buffers, used in turn; each is reused once the copy from it is done.
  struct Staging {
    void* host = nullptr;
    std::size_t bytes = 0;
    cudaEvent_t done = nullptr;
  };
  Staging& staging_for(std::size_t bytes);
  void stage_and_copy(void* device_dst, const void* host, std::size_t bytes, cudaStream_t stream);

  int index_;
  cudaStream_t stream_ = nullptr, copy_stream_ = nullptr;
  CudaMemory memory_;
  CachingAllocator allocator_;
  cudnnHandle_t cudnn_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  std::mutex staging_mutex_;
  std::vector<Staging> staging_;
  std::size_t next_staging_ = 0;
};

}  // namespace kolo::models::cuda
