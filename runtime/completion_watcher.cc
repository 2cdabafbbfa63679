#include "completion_watcher.h"

#include "gpu_state.h"

namespace kolo {

CompletionWatcher::~CompletionWatcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void CompletionWatcher::add(std::shared_ptr<ops::Event> done,
                            std::vector<std::shared_ptr<detail::HandleState>> handles) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back({std::move(done), std::move(handles)});
    if (!thread_.joinable()) thread_ = std::thread(&CompletionWatcher::loop, this);
  }
  work_cv_.notify_one();
}

void CompletionWatcher::drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  drained_cv_.wait(lock, [this] { return queue_.empty() && !busy_; });
}

std::size_t CompletionWatcher::pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size() + (busy_ ? 1 : 0);
}

void CompletionWatcher::loop() {
  for (;;) {
    Pending next;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_cv_.wait(lock, [this] { return !queue_.empty() || stopping_; });
      if (queue_.empty()) return;  // stopping, and nothing left
      next = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
    }
    Status status;
    try {
      ops::wait_for(*next.done, timeout_, "a collective", clock_);
    } catch (const Error& e) {
      status = Status(e.code(), e.what());  // DeviceError from the device, CommFailure on time-out
    } catch (const std::exception& e) {
      status = Status(StatusCode::Internal, std::string("kolo: internal error: ") + e.what());
    }
    for (auto& handle : next.handles) handle->complete(status);
    if (!status.ok() && on_failure_) on_failure_(status);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      busy_ = false;
    }
    drained_cv_.notify_all();
  }
}

}  // namespace kolo
