// What kolo reads for time: the runtime's cycles, stall and partial-slot timeouts, and the
// deadline of every wait for the other ranks (control messages, collectives in-process, GPU
// completion). The wall clock in production (steady_clock()); runtime/clock.h adds a clock
// that tests advance by hand instead of sleeping. It lives in ops because the MPI control
// channel's deadline reads it too.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>

#include "kolo/kolo.h"

namespace kolo::ops {

class Clock {
 public:
  using duration = std::chrono::steady_clock::duration;
  using time_point = std::chrono::steady_clock::time_point;

  virtual ~Clock() = default;

  virtual time_point now() const = 0;
  // A wait for `deadline` on this clock sleeps, in real time, at most until the point
  // returned, then reads the clock again: the deadline itself for the wall clock, a short
  // slice for a clock that moves by hand (so that a waiter notices when it is moved past
  // its deadline).
  virtual std::chrono::steady_clock::time_point wake_by(time_point deadline) const = 0;
};

// std::chrono::steady_clock.
const Clock& steady_clock();

// Waits on `cv` (with `lock` held) until `ready()` or `deadline` on `clock`; returns ready().
template <typename Ready>
bool wait_until(const Clock& clock, std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                Clock::time_point deadline, Ready ready) {
  while (!ready()) {
    if (clock.now() >= deadline) return false;
    cv.wait_until(lock, clock.wake_by(deadline));
  }
  return true;
}

// Sleeps until `deadline` on `clock`.
void sleep_until(const Clock& clock, Clock::time_point deadline);

// What a wait for the other ranks that reached its deadline throws (CommFailure): `waited`
// is the timeout, `during` what was being waited for.
Error no_answer(std::chrono::milliseconds waited, const std::string& during);

}  // namespace kolo::ops
