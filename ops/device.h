// What the executor needs from the memory a tensor lives in, so that one executor runs
// CPU and GPU tensors alike: element-wise passes over many tensors at once (copies with
// casting and scaling, for fusion and compression), buffers, and events. The CPU
// implementation works at once on the calling thread; the CUDA one (ops/cuda/) enqueues
// on kolo's stream, so that the background thread never waits for the GPU.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "clock.h"
#include "kolo/kolo.h"

namespace kolo::ops {

// A point a device stream reaches: a gradient is ready, a collective has finished.
class Event {
 public:
  virtual ~Event() = default;
  // True once reached. Throws kolo::Error(CommFailure) if the device reported a failure.
  virtual bool query() = 0;
  // Makes `stream` (a cudaStream_t) wait for this event on the device, without the host.
  virtual void block_stream(void* stream) = 0;
};

// An event that is already reached: what synchronous (CPU) work returns.
std::shared_ptr<Event> reached_event();

// Polls `event` (briefly spinning, then sleeping: never a device-wide synchronisation)
// until it is reached. Throws kolo::Error(CommFailure) naming `what` after `timeout` on
// `clock`.
void wait_for(Event& event, std::chrono::milliseconds timeout, const char* what,
              const Clock& clock = steady_clock());

// One tensor's part of a batched pass: `count` elements from `src` to `dst`.
struct CopyPiece {
  void* dst = nullptr;
  const void* src = nullptr;  // nullptr: dst is filled with zeros
  int64_t count = 0;
};

class DeviceOps {
 public:
  virtual ~DeviceOps() = default;

  virtual Device device() const = 0;
  // The stream the work is enqueued on (a cudaStream_t), for the backends that share it;
  // nullptr on the host.
  virtual void* stream() const { return nullptr; }
  // For every piece, dst[i] = to(from(src[i]) * factor), in one pass (one kernel launch
  // for many tensors on a GPU). `from` and `to` are both floating point, or equal (then
  // only factor 1 is allowed for integers). dst may equal src when from == to.
  virtual void convert(std::span<const CopyPiece> pieces, DType from, DType to, double factor) = 0;
  // Memory on this device, freed when the last reference goes.
  virtual std::shared_ptr<void> allocate(std::size_t bytes) = 0;
  // Later work on this device waits for `event` (a tensor's readiness).
  virtual void wait(Event& event) = 0;
  // Reached once all work enqueued so far is done; nullptr when the work is synchronous.
  virtual std::shared_ptr<Event> record() = 0;
};

// Host memory, synchronous. `device` is what it reports: Device::cpu(), or a CUDA device
// whose memory the tests let host memory stand in for (KOLO_TEST_HOST_GPU).
std::unique_ptr<DeviceOps> make_cpu_ops(Device device = Device::cpu());

// Converts `count` elements between float dtypes on the CPU (the reference the GPU
// kernels are tested against, and the CPU side of compression).
void convert_on_cpu(void* dst, DType to, const void* src, DType from, int64_t count, double factor);

// Bytes of a buffer that grows to the largest size asked for, on one device.
class GrowingBuffer {
 public:
  void* get(DeviceOps& ops, std::size_t bytes) {
    if (bytes > bytes_ || !memory_) {
      memory_.reset();  // free first: the old one is never needed again
      memory_ = ops.allocate(bytes);
      bytes_ = bytes;
    }
    return memory_.get();
  }

 private:
  std::shared_ptr<void> memory_;
  std::size_t bytes_ = 0;
};

}  // namespace kolo::ops
