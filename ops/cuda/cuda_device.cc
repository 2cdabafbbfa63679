#include "cuda_device.h"

#include <algorithm>
#include <vector>

#include "cuda_check.h"
#include "batched_convert.h"

namespace kolo::ops::cuda {

CudaEvent::CudaEvent() {
  check_cuda(cudaGetDevice(&device_), "cudaGetDevice");
  check_cuda(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), "cudaEventCreateWithFlags");
}

CudaEvent::~CudaEvent() {
  if (event_ != nullptr) (void)cudaEventDestroy(event_);  // released once reached, if pending
}

void CudaEvent::record(cudaStream_t stream) { check_cuda(cudaEventRecord(event_, stream), "cudaEventRecord"); }

bool CudaEvent::query() {
  // The completion watcher's thread polls here: make the event's device its current one,
  // so that CUDA never creates a context for it on device 0 of a multi-GPU node.
  if (int current = -1; cudaGetDevice(&current) == cudaSuccess && current != device_)
    check_cuda(cudaSetDevice(device_), "cudaSetDevice (event query)");
  const cudaError_t state = cudaEventQuery(event_);
  if (state == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  check_cuda(state, "cudaEventQuery (the GPU failed while running kolo's work or its producer's)");
  return true;
}

void CudaEvent::block_stream(void* stream) {
  check_cuda(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), event_, 0), "cudaStreamWaitEvent");
}

std::shared_ptr<CudaEvent> record_event(cudaStream_t stream) {
  auto event = std::make_shared<CudaEvent>();
  event->record(stream);
  return event;
}

namespace {

class CudaOps final : public DeviceOps {
 public:
  explicit CudaOps(int device) : device_(device) {
    check_cuda(cudaSetDevice(device), "cudaSetDevice");
    // Non-blocking: never ordered behind the legacy default stream, where a training loop
    // may keep computing. Highest priority: collectives are on the critical path.
    int least = 0, greatest = 0;
    check_cuda(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange");
    check_cuda(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, greatest),
               "cudaStreamCreateWithPriority");
  }
  ~CudaOps() override { (void)cudaStreamDestroy(stream_); }  // released once its work is done

  Device device() const override { return Device::cuda(device_); }
  void* stream() const override { return stream_; }

  void convert(std::span<const CopyPiece> pieces, DType from, DType to, double factor) override {
    if (pieces.empty()) return;
    pieces_.clear();
    for (const CopyPiece& p : pieces) pieces_.push_back({p.dst, p.src, p.count});
    check_cuda(launch_convert(pieces_.data(), static_cast<int>(pieces_.size()), static_cast<int>(from),
                              static_cast<int>(to), factor, stream_),
               "launching kolo's copy/cast kernel");
  }

  std::shared_ptr<void> allocate(std::size_t bytes) override {
    void* memory = nullptr;
    check_cuda(cudaMalloc(&memory, std::max<std::size_t>(bytes, 1)), "cudaMalloc");
    return std::shared_ptr<void>(memory, [](void* p) { (void)cudaFree(p); });
  }

  void wait(Event& event) override { event.block_stream(stream_); }

  std::shared_ptr<Event> record() override { return record_event(stream_); }

 private:
  int device_;
  cudaStream_t stream_ = nullptr;
  std::vector<KernelPiece> pieces_;
};

class CudaCopier final : public StagingCopier {
 public:
  explicit CudaCopier(DeviceOps& ops) : stream_(static_cast<cudaStream_t>(ops.stream())) {}
  ~CudaCopier() override {
    if (buffer_ != nullptr) (void)cudaFreeHost(buffer_);
  }

  std::byte* host_buffer(std::size_t bytes) override {
    if (bytes <= capacity_) return buffer_;
    if (buffer_ != nullptr) {
      wait_for(*record_event(stream_), std::chrono::seconds(300), "the copies through the old staging buffer");
      check_cuda(cudaFreeHost(buffer_), "cudaFreeHost");
      buffer_ = nullptr;
    }
    const std::size_t grown = std::max(bytes, capacity_ * 2);
    void* memory = nullptr;
    check_cuda(cudaHostAlloc(&memory, grown, cudaHostAllocPortable), "cudaHostAlloc (pinned staging buffer)");
    buffer_ = static_cast<std::byte*>(memory);
    capacity_ = grown;
    return buffer_;
  }

  void to_host(void* host, const void* device, std::size_t bytes) override {
    check_cuda(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream_), "cudaMemcpyAsync (to host)");
  }
  void to_device(void* device, const void* host, std::size_t bytes) override {
    check_cuda(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync (to device)");
  }
  std::shared_ptr<Event> mark() override { return record_event(stream_); }

 private:
  cudaStream_t stream_;
  std::byte* buffer_ = nullptr;
  std::size_t capacity_ = 0;
};

}  // namespace

std::unique_ptr<DeviceOps> make_cuda_ops(int device) { return std::make_unique<CudaOps>(device); }
std::unique_ptr<StagingCopier> make_cuda_copier(DeviceOps& ops) { return std::make_unique<CudaCopier>(ops); }

}  // namespace kolo::ops::cuda
