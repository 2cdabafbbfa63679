#include "common/format.h"

#include <cmath>
#include <cstdio>

namespace kolo::examples {

std::string with_thousands(int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return value < 0 ? "-" + out : out;
}

std::string count_of(double count, const std::string& noun) {
  char number[32];
  std::snprintf(number, sizeof number, "%g", count);
  return std::string(number) + " " + noun + (count == 1 ? "" : "s");
}

std::string duration_string(double seconds) {
  char text[48];
  if (seconds < 60) {
    std::snprintf(text, sizeof text, "%.1fs", seconds);
    return text;
  }
  const auto total = static_cast<int64_t>(std::llround(seconds));
  const int64_t h = total / 3600, m = total / 60 % 60, s = total % 60;
  if (h > 0) {
    std::snprintf(text, sizeof text, "%lldh%02lldm%02llds", static_cast<long long>(h), static_cast<long long>(m),
                  static_cast<long long>(s));
  } else {
    std::snprintf(text, sizeof text, "%lldm%02llds", static_cast<long long>(m), static_cast<long long>(s));
  }
  return text;
}

std::string epoch_line(const EpochReport& r) {
  char metrics[128];
  std::snprintf(metrics, sizeof metrics, "loss %.4f - acc %.4f", r.loss, r.acc);
  std::string line = "epoch " + std::to_string(r.epoch) + "/" + std::to_string(r.epochs) + " - " +
                     with_thousands(r.steps) + " steps - " + duration_string(r.seconds) + " - " + metrics;
  if (r.val_acc >= 0) {
    char val[32];
    std::snprintf(val, sizeof val, " - val_acc %.4f", r.val_acc);
    line += val;
  }
  return line + " - " + with_thousands(std::llround(r.images_per_s)) + " img/s";
}

}  // namespace kolo::examples
