#include "common/progress_bar.h"

#include "common/format.h"

namespace kolo::examples {

void ProgressBar::start(std::string label, int64_t total_steps) {
  label_ = std::move(label);
  total_ = total_steps;
  start_ = std::chrono::steady_clock::now();
  last_draw_ = {};
}

void ProgressBar::update(int64_t done, double loss, double acc) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (done < total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  constexpr int64_t kWidth = 30;
  const int64_t filled = total_ > 0 ? kWidth * done / total_ : kWidth;
  std::string bar(static_cast<std::size_t>(kWidth), '.');
  for (int64_t i = 0; i < filled; ++i) bar[static_cast<std::size_t>(i)] = '=';
  if (filled < kWidth) bar[static_cast<std::size_t>(filled)] = '>';
  const int digits = static_cast<int>(std::to_string(total_).size());
  char counts[64];
  std::snprintf(counts, sizeof counts, "  %*lld/%lld [", digits, static_cast<long long>(done),
                static_cast<long long>(total_));
  char metrics[96];
  std::snprintf(metrics, sizeof metrics, " - loss %.4f - acc %.4f", loss, acc);
  std::string line = label_ + counts + bar + "] " +
                     duration_string(std::chrono::duration<double>(now - start_).count()) + metrics;
  const std::size_t width = line.size();
  if (width < drawn_width_) line += std::string(drawn_width_ - width, ' ');  // cover a longer previous line
  drawn_width_ = width;
  std::fprintf(out_, "\r%s", line.c_str());
  std::fflush(out_);
}

void ProgressBar::clear() {
  if (!enabled_ || drawn_width_ == 0) return;
  std::fprintf(out_, "\r%s\r", std::string(drawn_width_, ' ').c_str());
  std::fflush(out_);
  drawn_width_ = 0;
}

}  // namespace kolo::examples
