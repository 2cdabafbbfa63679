#include "clock.h"

#include <thread>

namespace kolo::ops {
namespace {

class SteadyClock final : public Clock {
 public:
  time_point now() const override { return std::chrono::steady_clock::now(); }
  std::chrono::steady_clock::time_point wake_by(time_point deadline) const override { return deadline; }
};

}  // namespace

const Clock& steady_clock() {
  static const SteadyClock clock;
  return clock;
}

void sleep_until(const Clock& clock, Clock::time_point deadline) {
  while (clock.now() < deadline) std::this_thread::sleep_until(clock.wake_by(deadline));
}

Error no_answer(std::chrono::milliseconds waited, const std::string& during) {
  return Error(StatusCode::CommFailure,
               "no answer from the other ranks for " +
                   std::to_string(std::chrono::duration_cast<std::chrono::seconds>(waited).count()) +
                   " s during " + during + ": a rank has died, hung, or lost its network link");
}

}  // namespace kolo::ops
