// The shared state behind a kolo::Handle: the background thread fills it in and marks it
// done; the caller polls or sleeps on it. Completion is one atomic store, plus a futex
// wake-up only when a caller is actually asleep: a step completes hundreds of these.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "kolo/kolo.h"

namespace kolo::detail {

class GpuState;  // gpu_state.h

struct HandleState {
  using Clock = std::chrono::steady_clock;

  // 1 once status and the results below are final (release); read without a lock.
  std::atomic<uint32_t> done{0};
  std::atomic<uint32_t> sleepers{0};  // callers asleep (or about to be) on `done`
  Status status;
  // Results whose size depends on other ranks (allgather, alltoall, reducescatter).
  std::vector<std::byte> output_storage;
  TensorView output;
  std::vector<int64_t> received_splits;
  // join: the rank that joined last; adding a process set: the new set's id.
  int64_t value = -1;
  std::shared_ptr<GpuState> gpu;  // GPU operations only: events, device result (gpu_state.h)

  bool is_done() const { return done.load(std::memory_order_acquire) != 0; }

  // Completing a batch: mark_done() each, then wake_sleepers() each, so that a caller
  // waiting on the handles in turn is woken once, not once per handle.
  void mark_done(Status s);
  void wake_sleepers();
  void complete(Status s) {
    mark_done(std::move(s));
    wake_sleepers();
  }

  // Blocks until done or until `deadline`; returns whether it is done.
  bool wait_until(std::optional<Clock::time_point> deadline);
};

// Tells the running kolo, if any, that a caller is about to wait on a handle, so that the
// background thread starts a cycle now instead of at its next tick (api.cc).
void note_caller_waits();

}  // namespace kolo::detail
