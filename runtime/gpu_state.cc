#include "gpu_state.h"

#include "tensor_queue.h"

namespace kolo::detail {

void GpuState::publish(std::shared_ptr<ops::Event> done) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = std::move(done);
  }
  published_cv_.notify_all();
}

std::shared_ptr<ops::Event> GpuState::wait_published(const HandleState& handle) {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (done_) return done_;
    if (handle.done.load(std::memory_order_acquire)) return done_;
    // Short waits: a handle that fails without publishing signals only its own condition.
    published_cv_.wait_for(lock, std::chrono::milliseconds(1));
  }
}

}  // namespace kolo::detail
