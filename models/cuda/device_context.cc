#include "models/cuda/device_context.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "kolo/check.h"
#include "models/cuda/cudnn_cublas_check.h"
#include "ops/cuda/device_guard.h"

namespace kolo::models::cuda {
namespace {
// Uploads larger than this go through the staging buffers in pieces.
constexpr std::size_t kStagingChunk = std::size_t{32} << 20;
constexpr std::size_t kMinStaging = std::size_t{1} << 20;
constexpr double kStagingTimeoutSeconds = 600;

StreamId id(cudaStream_t s) { return reinterpret_cast<StreamId>(s); }

// An event recorded now on `stream`, destroyed with the object.
class Marker {
 public:
  explicit Marker(cudaStream_t stream) {
    KOLO_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
    KOLO_CUDA_CHECK(cudaEventRecord(event_, stream));
  }
  ~Marker() { cudaEventDestroy(event_); }  // pending events are released once reached
  Marker(const Marker&) = delete;
  Marker& operator=(const Marker&) = delete;
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};
}  // namespace

void wait_for(cudaEvent_t event, double timeout_seconds, const char* what) {
  const auto start = std::chrono::steady_clock::now();
  for (int polls = 0;; ++polls) {
    const cudaError_t status = cudaEventQuery(event);
    if (status == cudaSuccess) return;
    if (status != cudaErrorNotReady) KOLO_CUDA_CHECK(status);
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    KOLO_CHECK(waited <= timeout_seconds, StatusCode::DeviceError,
               "kolo: the GPU did not finish " + std::string(what) + " within " +
                   std::to_string(static_cast<int>(timeout_seconds)) + " s");
    // Most waits are short (a loss value at the end of a forward pass): poll first.
    if (polls < 2000) std::this_thread::yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

DeviceContext::DeviceContext(int index) : index_(index), memory_(index), allocator_(memory_) {
  ops::cuda::DeviceGuard on(index);
  KOLO_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  KOLO_CUDA_CHECK(cudaStreamCreateWithFlags(&copy_stream_, cudaStreamNonBlocking));
  KOLO_CUDNN_CHECK(cudnnCreate(&cudnn_));
  KOLO_CUDNN_CHECK(cudnnSetStream(cudnn_, stream_));
  KOLO_CUBLAS_CHECK(cublasCreate(&cublas_));
  KOLO_CUBLAS_CHECK(cublasSetStream(cublas_, stream_));
  staging_.resize(2);  // one being filled while the other's copy runs
}

std::shared_ptr<void> DeviceContext::allocate(std::size_t bytes) {
  void* p = allocator_.allocate(bytes, id(stream_));
  return std::shared_ptr<void>(p, [this](void* q) { allocator_.free(q); });
}

DeviceContext::Staging& DeviceContext::staging_for(std::size_t bytes) {
  Staging& s = staging_[next_staging_];
  next_staging_ = (next_staging_ + 1) % staging_.size();
  if (s.done) wait_for(s.done, kStagingTimeoutSeconds, "a copy from a pinned staging buffer");
  else KOLO_CUDA_CHECK(cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming));
  if (s.bytes < bytes) {
    if (s.host) KOLO_CUDA_CHECK(cudaFreeHost(s.host));
    s.host = nullptr;
    s.bytes = 0;
    const std::size_t size = std::max(bytes, kMinStaging);
    KOLO_CUDA_CHECK(cudaHostAlloc(&s.host, size, cudaHostAllocDefault));
    s.bytes = size;
  }
  return s;
}

void DeviceContext::stage_and_copy(void* device_dst, const void* host, std::size_t bytes, cudaStream_t stream) {
  ops::cuda::DeviceGuard on(index_);
  std::lock_guard<std::mutex> lock(staging_mutex_);
  for (std::size_t offset = 0; offset < bytes; offset += kStagingChunk) {
    const std::size_t n = std::min(kStagingChunk, bytes - offset);
    Staging& s = staging_for(n);
    std::memcpy(s.host, static_cast<const char*>(host) + offset, n);
    KOLO_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(device_dst) + offset, s.host, n, cudaMemcpyHostToDevice, stream));
    KOLO_CUDA_CHECK(cudaEventRecord(s.done, stream));
  }
}

std::shared_ptr<void> DeviceContext::upload(const void* host, std::size_t bytes) {
  ops::cuda::DeviceGuard on(index_);
  void* p = allocator_.allocate(bytes, id(copy_stream_));
  std::shared_ptr<void> memory(p, [this](void* q) { allocator_.free(q); });
  if (bytes == 0) return memory;
  // The compute stream uses it: when freed, the copy stream reuses it only after that use.
  allocator_.record_stream(p, id(stream_));
  stage_and_copy(p, host, bytes, copy_stream_);
  Marker uploaded(copy_stream_);
  KOLO_CUDA_CHECK(cudaStreamWaitEvent(stream_, uploaded.get(), 0));
  return memory;
}

void DeviceContext::copy_to_device(void* device_dst, const void* host, std::size_t bytes) {
  if (bytes > 0) stage_and_copy(device_dst, host, bytes, stream_);
}

void DeviceContext::copy_to_host(void* host, const void* device_src, std::size_t bytes) {
  if (bytes == 0) return;
  ops::cuda::DeviceGuard on(index_);
  Marker ready(stream_);
  wait_for(ready.get(), kStagingTimeoutSeconds, "the work before a copy to the host");
  // The stream is idle up to here: this copy (pageable memory) returns once it is done.
  KOLO_CUDA_CHECK(cudaMemcpy(host, device_src, bytes, cudaMemcpyDeviceToHost));
}

void DeviceContext::synchronize(double timeout_seconds) {
  ops::cuda::DeviceGuard on(index_);
  Marker done(stream_);
  wait_for(done.get(), timeout_seconds, "its enqueued work");
}

}  // namespace kolo::models::cuda
