// The hand-off between callers and the background thread: callers push entries (a
// request plus the caller's buffers and handle) under a mutex and never block on the
// network; the background thread pops everything each cycle. Kept to a vector swap:
// this is on the path of every tensor of every step.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kolo/kolo.h"
#include "message.h"

namespace kolo {
namespace detail {

class GpuState;  // gpu_state.h

struct HandleState {
  std::mutex mutex;
  std::condition_variable done_cv;
  std::atomic<bool> done{false};  // set last, under the mutex; read without it to poll
  int waiters = 0;                // guarded by mutex: skip the wake-up syscall when zero
  Status status;
  // Results whose size depends on other ranks (allgather, alltoall, reducescatter).
  std::vector<std::byte> output_storage;
  TensorView output;
  std::vector<int64_t> received_splits;
  std::shared_ptr<GpuState> gpu;  // GPU operations only: events, device result (gpu_state.h)

  void complete(Status s);
};

}  // namespace detail

struct TensorEntry {
  using Clock = std::chrono::steady_clock;

  Request request;      // name, dtype, shape, ... (the caller's view, minus the memory)
  const void* input = nullptr;
  void* output = nullptr;
  std::vector<int64_t> splits;  // alltoall: rows sent to each rank
  std::shared_ptr<detail::HandleState> handle;
  Clock::time_point enqueued;
  Clock::time_point reported;  // when this rank told the others it is ready
};

class TensorQueue {
 public:
  // Fails, with the reason given to close(), once the queue is closed.
  Status push(TensorEntry entry);
  Status push(std::vector<TensorEntry> entries);  // kept together (a group)
  std::vector<TensorEntry> pop_all();
  // Refuses all further pushes with `reason`; returns what was still queued.
  std::vector<TensorEntry> close(const Status& reason);
  std::optional<Status> closed() const;

  // Sleeps until an entry arrives, wake() is called, or the timeout passes. When woken by
  // an entry, it then waits for the rest of a burst (see settle()).
  void wait_for_work(std::chrono::duration<double> timeout);
  void wake();

 private:
  template <typename Add>
  Status push_with(Add&& add);
  void settle();

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<TensorEntry> entries_;
  bool woken_ = false;
  bool sleeping_ = false;  // the background thread waits on cv_
  std::optional<Status> closed_;
  std::atomic<uint64_t> pushes_{0};
};

}  // namespace kolo
