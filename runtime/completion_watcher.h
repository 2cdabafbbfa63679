// Completes the handles of GPU operations once the device has done them. The background
// thread only enqueues GPU work and moves on; this thread polls each operation's
// completion event (never synchronising the whole device), in the order the work was
// enqueued, and fails the handles with CommFailure if an event reports a device error or
// is not reached within the timeout. It starts with the first GPU operation, so a
// CPU-only job never has it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "ops/device.h"
#include "tensor_queue.h"

namespace kolo {

class CompletionWatcher {
 public:
  explicit CompletionWatcher(std::chrono::milliseconds timeout) : timeout_(timeout) {}
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
  mutable std::mutex mutex_;
  std::condition_variable work_cv_, drained_cv_;
  std::deque<Pending> queue_;
  bool busy_ = false;  // the thread holds an operation taken from the queue
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace kolo
