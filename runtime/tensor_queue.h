// The hand-off between callers and the background thread: callers push entries (a
// request plus the caller's buffers and handle) under a mutex and never block on the
// network; the background thread pops everything each cycle.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "kolo/kolo.h"
#include "message.h"

namespace kolo {
namespace detail {

struct HandleState {
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  Status status;
  // Results whose size depends on other ranks (allgather, alltoall, reducescatter).
  std::vector<std::byte> output_storage;
  TensorView output;
  std::vector<int64_t> received_splits;

  void complete(Status s);
};

}  // namespace detail

struct TensorEntry {
  using Clock = std::chrono::steady_clock;

  Request request;
  TensorView input;
  TensorView output;
  std::vector<int64_t> splits;  // alltoall: rows sent to each rank
  std::shared_ptr<detail::HandleState> handle;
  Clock::time_point enqueued;
  Clock::time_point reported;  // when this rank told the others it is ready
};

class TensorQueue {
 public:
  // All-or-nothing: fails (InvalidArgument) if any name is already in flight or repeated.
  Status push(std::vector<TensorEntry> entries);
  std::vector<TensorEntry> pop_all();
  // The name may be submitted again (its operation is done).
  void release(const std::string& name);
  // Sleeps until an entry arrives, wake() is called, or the timeout passes.
  void wait_for_work(std::chrono::duration<double> timeout);
  void wake();

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<TensorEntry> entries_;
  std::unordered_set<std::string> in_flight_;
  bool woken_ = false;
};

}  // namespace kolo
