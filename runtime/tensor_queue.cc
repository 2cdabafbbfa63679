#include "tensor_queue.h"

#include <thread>

namespace kolo {

void detail::HandleState::complete(Status s) {
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mutex);
    status = std::move(s);
    done.store(true, std::memory_order_release);
    wake = waiters > 0;
  }
  if (wake) done_cv.notify_all();
}

template <typename Add>
Status TensorQueue::push_with(Add&& add) {
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return *closed_;
    add();
    wake = sleeping_;
  }
  pushes_.fetch_add(1, std::memory_order_relaxed);
  if (wake) cv_.notify_one();  // only then: a futex call per tensor would cost more than the rest
  return Status::OK();
}

Status TensorQueue::push(TensorEntry entry) {
  return push_with([&] { entries_.push_back(std::move(entry)); });
}

Status TensorQueue::push(std::vector<TensorEntry> entries) {
  return push_with([&] {
    for (TensorEntry& e : entries) entries_.push_back(std::move(e));
  });
}

std::vector<TensorEntry> TensorQueue::pop_all() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<TensorEntry> out;
  out.swap(entries_);
  return out;
}

std::vector<TensorEntry> TensorQueue::close(const Status& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  closed_ = reason;
  std::vector<TensorEntry> out;
  out.swap(entries_);
  return out;
}

std::optional<Status> TensorQueue::closed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return closed_;
}

void TensorQueue::wait_for_work(std::chrono::duration<double> timeout) {
  bool has_work;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    sleeping_ = true;
    cv_.wait_for(lock, timeout, [this] { return !entries_.empty() || woken_; });
    sleeping_ = false;
    woken_ = false;
    has_work = !entries_.empty();
  }
  if (has_work) settle();
}

// A step submits its gradients in bursts (many small tensors microseconds apart). Taking
// a burst in one cycle costs far less than one cycle per tensor, so after the first
// entry wait while more keep coming: until none arrived for a few microseconds.
void TensorQueue::settle() {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::microseconds(200);
  auto quiet_until = clock::now() + std::chrono::microseconds(5);
  uint64_t seen = pushes_.load(std::memory_order_relaxed);
  for (auto now = clock::now(); now < deadline && now < quiet_until; now = clock::now()) {
    std::this_thread::yield();
    const uint64_t pushes = pushes_.load(std::memory_order_relaxed);
    if (pushes != seen) {
      seen = pushes;
      quiet_until = clock::now() + std::chrono::microseconds(5);
    }
  }
}

void TensorQueue::wake() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    woken_ = true;
  }
  cv_.notify_one();
}

}  // namespace kolo
