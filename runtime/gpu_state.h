// The GPU side of one handle: the event that says the caller's tensor is ready (recorded
// at submission on the caller's stream), the device buffer of a result kolo allocates
// (allgather, alltoall, reducescatter), and the event that says the operation is done,
// published as soon as the background thread has enqueued the work, so that a framework
// can make its stream wait on it (Handle::wait_on_stream) before the host knows it is done.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "ops/device.h"

namespace kolo::detail {

struct HandleState;

class GpuState {
 public:
  std::shared_ptr<ops::Event> ready;     // set at submission, before the entry is queued
  std::shared_ptr<void> device_output;   // set by the background thread before done

  // Background thread: the work is enqueued and `done` will be reached when it finishes.
  void publish(std::shared_ptr<ops::Event> done);
  // The published event, once there is one; nullptr if `handle` completed without one
  // (it failed, or never reached the device).
  std::shared_ptr<ops::Event> wait_published(const HandleState& handle);

 private:
  std::mutex mutex_;
  std::condition_variable published_cv_;
  std::shared_ptr<ops::Event> done_;
};

}  // namespace kolo::detail
