#include "clock.h"

namespace kolo {

std::chrono::steady_clock::time_point ManualClock::wake_by(time_point deadline) const {
  const auto real_now = std::chrono::steady_clock::now();
  return deadline <= now() ? real_now : real_now + poll_;
}

}  // namespace kolo
