// The clock the runtime reads (ops/clock.h): cycle times, the stall inspector, the
// partial-slot timeout and every wait for the other ranks. Production runs on the wall
// clock, kolo::steady_clock(). Tests run on a ManualClock, which moves only when told, so
// that a stall of minutes or a control timeout takes no real time.
#pragma once

#include <atomic>
#include <chrono>

#include "ops/clock.h"

namespace kolo {

using Clock = ops::Clock;
using ops::steady_clock;

// Starts at the clock's epoch and moves only by advance(). Waits on it (ops::wait_until,
// sleep_until) sleep in real slices of `poll` and read it again after each, so that a
// waiter notices within a slice when advance() passes its deadline. Any thread may read or
// advance it.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(std::chrono::microseconds poll = std::chrono::microseconds(100)) : poll_(poll) {}

  time_point now() const override { return time_point(duration(now_.load(std::memory_order_acquire))); }
  std::chrono::steady_clock::time_point wake_by(time_point deadline) const override;
  void advance(duration by) { now_.fetch_add(by.count(), std::memory_order_acq_rel); }

 private:
  std::atomic<duration::rep> now_{0};
  std::chrono::microseconds poll_;
};

}  // namespace kolo
