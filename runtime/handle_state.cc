#include "handle_state.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <ctime>

namespace kolo::detail {
namespace {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t), "a futex is a plain 32-bit word");

// Sleeps while *word == expected, at most `timeout` (none: indefinitely). Spurious
// returns are fine: the caller re-checks.
void futex_wait(std::atomic<uint32_t>& word, uint32_t expected, std::optional<std::chrono::nanoseconds> timeout) {
  timespec ts{};
  if (timeout) {
    ts.tv_sec = static_cast<time_t>(timeout->count() / 1'000'000'000);
    ts.tv_nsec = static_cast<long>(timeout->count() % 1'000'000'000);
  }
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, timeout ? &ts : nullptr,
          nullptr, 0);
}

void futex_wake_all(std::atomic<uint32_t>& word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr, nullptr, 0);
}

}  // namespace

void HandleState::mark_done(Status s) {
  status = std::move(s);
  done.store(1, std::memory_order_seq_cst);
}

// The seq_cst store of `done` above and the load of `sleepers` here pair with the
// sleeper's increment and its futex check of `done`: either the sleeper sees done == 1
// and does not sleep, or this sees it and wakes it.
void HandleState::wake_sleepers() {
  if (sleepers.load(std::memory_order_seq_cst) > 0) futex_wake_all(done);
}

bool HandleState::wait_until(std::optional<Clock::time_point> deadline) {
  if (is_done()) return true;
  sleepers.fetch_add(1, std::memory_order_seq_cst);
  while (!is_done()) {
    std::optional<std::chrono::nanoseconds> timeout;
    if (deadline) {
      const auto left = *deadline - Clock::now();
      if (left <= Clock::duration::zero()) break;
      timeout = std::chrono::duration_cast<std::chrono::nanoseconds>(left);
    }
    futex_wait(done, 0, timeout);
  }
  sleepers.fetch_sub(1, std::memory_order_relaxed);
  return is_done();
}

}  // namespace kolo::detail
