// Completes the handles of GPU operations once the device has done them. The background
// thread only enqueues GPU work and moves on; this thread polls each operation's
// completion event (never synchronising the whole device), in the order the work was
// enqueued, and fails the handles with DeviceError if an event reports a device error, or
// CommFailure if it is not reached within the timeout. It starts with the first GPU
// operation, so a CPU-only job never has it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "clock.h"
#include "ops/device.h"
#include "tensor_queue.h"

namespace kolo {

class CompletionWatcher {
 public:
  // Each operation may take `timeout` on `clock` (which must outlive the watcher). An
  // operation that fails (its device failed, or it was not done in time) is also reported
  // to `on_failure`, if given: the stream it ran on is then of no more use (watchdog.h).
  explicit CompletionWatcher(std::chrono::milliseconds timeout, const Clock& clock = steady_clock(),
                             std::function<void(const Status&)> on_failure = nullptr)
      : timeout_(timeout), clock_(clock), on_failure_(std::move(on_failure)) {}
  ~CompletionWatcher();  // completes what is pending (each wait bounded), then stops
  CompletionWatcher(const CompletionWatcher&) = delete;
  CompletionWatcher& operator=(const CompletionWatcher&) = delete;

  void add(std::shared_ptr<ops::Event> done, std::vector<std::shared_ptr<detail::HandleState>> handles);
  // Blocks until every operation added so far has completed its handles.
  void drain();
  std::size_t pending() const;

 private:
  struct Pending {
    std::shared_ptr<ops::Event> done;
    std::vector<std::shared_ptr<detail::HandleState>> handles;
  };
  void loop();

  std::chrono::milliseconds timeout_;
  const Clock& clock_;
  std::function<void(const Status&)> on_failure_;
  mutable std::mutex mutex_;
  std::condition_variable work_cv_, drained_cv_;
  std::deque<Pending> queue_;
  bool busy_ = false;  // the thread holds an operation taken from the queue
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace kolo
