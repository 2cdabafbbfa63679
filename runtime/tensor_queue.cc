#include "tensor_queue.h"

namespace kolo {

// A push never wakes the background thread: it picks entries up at its next cycle (at
// most a cycle time away), or at once when a caller starts waiting (caller_waits()).
// Waking it per burst would cost a context switch in the middle of the burst, on the
// core the submitting thread shares with it under mpirun's default binding.
template <typename Add>
Status TensorQueue::push_with(std::span<const EntryPtr> pushed, Add&& add) {
  for (const EntryPtr& e : pushed) e->name_hash = std::hash<std::string>{}(e->request.name);
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed_) return *closed_;
  if (Status refused = claim_names(pushed); !refused.ok()) return refused;
  add();
  ++pushes_;
  caller_waiting_ = false;
  return Status::OK();
}

// Under mutex_: all the names, or none and why.
Status TensorQueue::claim_names(std::span<const EntryPtr> pushed) {
  for (std::size_t i = 0; i < pushed.size(); ++i) {
    const std::string& name = pushed[i]->request.name;
    if (!names_in_flight_.insert(&name, pushed[i]->name_hash)) {
      for (std::size_t j = 0; j < i; ++j) names_in_flight_.erase(&pushed[j]->request.name, pushed[j]->name_hash);
      return Status(StatusCode::InvalidArgument, "kolo: tensor name '" + name + "' is already in flight" + where_ +
                                                     "; wait for its handle before submitting it again");
    }
  }
  return Status::OK();
}

Status TensorQueue::push(EntryPtr entry) {
  return push_with({&entry, 1}, [&] { entries_.push_back(std::move(entry)); });
}

Status TensorQueue::push(std::vector<EntryPtr> entries) {
  return push_with(entries, [&] {
    for (EntryPtr& e : entries) entries_.push_back(std::move(e));
  });
}

void TensorQueue::forget(const std::vector<TensorEntry*>& entries) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const TensorEntry* e : entries)
    if (e != nullptr) names_in_flight_.erase(&e->request.name, e->name_hash);
}

void TensorQueue::take_all(std::vector<EntryPtr>& into) {
  into.clear();
  std::lock_guard<std::mutex> lock(mutex_);
  into.swap(entries_);
}

std::vector<EntryPtr> TensorQueue::close(const Status& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  closed_ = reason;
  std::vector<EntryPtr> out;
  out.swap(entries_);
  return out;
}

std::optional<Status> TensorQueue::closed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return closed_;
}

void TensorQueue::wait_for_work(Clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  sleeping_ = true;
  ops::wait_until(clock_, cv_, lock, deadline, [this] { return woken_ || (caller_waiting_ && !entries_.empty()); });
  sleeping_ = false;
  const bool woken = woken_;
  woken_ = false;
  if (!woken && !entries_.empty()) settle(lock);
}

// A step submits its gradients in bursts (many small tensors microseconds apart). Taking
// a burst in one cycle costs far less than one cycle per tensor, so when the cycle time
// finds a burst under way, wait (asleep: the submitting thread may need this core) until
// a caller waits on a handle or no entry arrived for a while.
void TensorQueue::settle(std::unique_lock<std::mutex>& lock) {
  constexpr auto kQuiet = std::chrono::microseconds(20);
  constexpr auto kLongest = std::chrono::microseconds(500);
  const auto give_up = clock_.now() + kLongest;
  settling_ = true;
  for (uint64_t seen = pushes_ - 1; pushes_ != seen;) {
    seen = pushes_;
    const auto until = std::min(clock_.now() + kQuiet, give_up);
    if (ops::wait_until(clock_, cv_, lock, until, [this] { return caller_waiting_ || woken_ || closed_; })) break;
    if (clock_.now() >= give_up) break;
  }
  settling_ = false;
}

void TensorQueue::wake() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    woken_ = true;
  }
  cv_.notify_one();
}

void TensorQueue::caller_waits() {
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    caller_waiting_ = true;
    wake = settling_ || (sleeping_ && !entries_.empty());
  }
  if (wake) cv_.notify_one();
}

}  // namespace kolo
