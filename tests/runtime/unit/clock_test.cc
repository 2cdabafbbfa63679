// The clocks the runtime reads: the wall clock, and the manual clock that tests advance
// instead of sleeping, whose waiters notice within a poll slice when it passes their
// deadline.
#include <catch2/catch.hpp>

#include <future>
#include <thread>

#include "runtime/clock.h"

using namespace std::chrono_literals;

TEST_CASE("the manual clock starts at its epoch and moves only when advanced", "[clock]") {
  kolo::ManualClock clock;
  CHECK(clock.now().time_since_epoch() == kolo::Clock::duration::zero());
  std::this_thread::sleep_for(2ms);
  CHECK(clock.now().time_since_epoch() == kolo::Clock::duration::zero());
  clock.advance(1500ms);
  clock.advance(500us);
  CHECK(clock.now().time_since_epoch() == 1500500us);
}

namespace {

// Whatever a test's checks find, the clock ends far in the future, so that a waiter still
// waiting on it returns (declared after the waiter's future, it runs before the future's
// destructor waits for it).
struct ReleaseWaiters {
  kolo::ManualClock& clock;
  ~ReleaseWaiters() { clock.advance(std::chrono::hours(24 * 365)); }
};

}  // namespace

TEST_CASE("a wait on the manual clock ends when the clock passes its deadline, not before", "[clock]") {
  kolo::ManualClock clock;
  std::mutex mutex;
  std::condition_variable cv;
  const auto deadline = clock.now() + 60s;
  auto waited = std::async(std::launch::async, [&] {
    std::unique_lock<std::mutex> lock(mutex);
    return kolo::ops::wait_until(clock, cv, lock, deadline, [] { return false; });
  });
  ReleaseWaiters release{clock};
  clock.advance(59s);
  CHECK(waited.wait_for(50ms) == std::future_status::timeout);
  const auto real_start = std::chrono::steady_clock::now();
  clock.advance(1s);
  REQUIRE(waited.wait_for(10s) == std::future_status::ready);
  CHECK_FALSE(waited.get());
  CHECK(std::chrono::steady_clock::now() - real_start < 1s);  // a minute of clock time, no real minute
}

TEST_CASE("a wait on the manual clock returns as soon as it is notified ready", "[clock]") {
  kolo::ManualClock clock;
  std::mutex mutex;
  std::condition_variable cv;
  bool ready = false;
  const auto deadline = clock.now() + 1s;
  auto waited = std::async(std::launch::async, [&] {
    std::unique_lock<std::mutex> lock(mutex);
    return kolo::ops::wait_until(clock, cv, lock, deadline, [&] { return ready; });
  });
  ReleaseWaiters release{clock};
  {
    std::lock_guard<std::mutex> lock(mutex);
    ready = true;
  }
  cv.notify_all();
  REQUIRE(waited.wait_for(10s) == std::future_status::ready);
  CHECK(waited.get());
}

TEST_CASE("sleep_until on the manual clock returns once the clock is advanced past it", "[clock]") {
  kolo::ManualClock clock;
  const auto deadline = clock.now() + 10min;
  auto slept = std::async(std::launch::async, [&] { kolo::ops::sleep_until(clock, deadline); });
  ReleaseWaiters release{clock};
  CHECK(slept.wait_for(20ms) == std::future_status::timeout);
  clock.advance(10min);
  CHECK(slept.wait_for(10s) == std::future_status::ready);
}

TEST_CASE("the wall clock is steady_clock, and its waits sleep until the deadline itself", "[clock]") {
  const kolo::Clock& clock = kolo::steady_clock();
  const auto before = std::chrono::steady_clock::now();
  const auto now = clock.now();
  CHECK(now >= before);
  CHECK(now <= std::chrono::steady_clock::now());
  const auto deadline = now + 5s;
  CHECK(clock.wake_by(deadline) == deadline);
  kolo::ops::sleep_until(clock, clock.now() + 2ms);
  CHECK(std::chrono::steady_clock::now() - before >= 2ms);
}
