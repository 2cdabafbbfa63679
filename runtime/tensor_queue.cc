#include "tensor_queue.h"

namespace kolo {

void detail::HandleState::complete(Status s) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    status = std::move(s);
    done = true;
  }
  done_cv.notify_all();
}

Status TensorQueue::push(std::vector<TensorEntry> entries) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::unordered_set<std::string> batch;
    for (const TensorEntry& e : entries) {
      if (in_flight_.count(e.request.name) || !batch.insert(e.request.name).second)
        return Status(StatusCode::InvalidArgument,
                      "kolo: tensor name '" + e.request.name +
                          "' is already in flight; wait for its handle before submitting it again");
    }
    for (TensorEntry& e : entries) {
      in_flight_.insert(e.request.name);
      entries_.push_back(std::move(e));
    }
  }
  cv_.notify_one();
  return Status::OK();
}

std::vector<TensorEntry> TensorQueue::pop_all() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<TensorEntry> out;
  out.swap(entries_);
  return out;
}

void TensorQueue::release(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  in_flight_.erase(name);
}

void TensorQueue::wait_for_work(std::chrono::duration<double> timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait_for(lock, timeout, [this] { return !entries_.empty() || woken_; });
  woken_ = false;
}

void TensorQueue::wake() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    woken_ = true;
  }
  cv_.notify_one();
}

}  // namespace kolo
