#include "autotuner.h"

#include <algorithm>
#include <cstdio>

namespace kolo {

Autotuner::Autotuner(std::vector<TunedSetting> candidates, int64_t bytes_per_trial)
    : candidates_(std::move(candidates)), bytes_per_trial_(bytes_per_trial),
      score_(candidates_.size(), 0.0) {
  done_ = candidates_.size() <= 1;
}

std::vector<TunedSetting> Autotuner::default_candidates(int size) {
  std::vector<TunedSetting> grid;
  for (int64_t threshold : {int64_t{1} << 20, int64_t{4} << 20, int64_t{64} << 20})
    for (int64_t per_rank : {int64_t{256} << 10, int64_t{1} << 20, int64_t{4} << 20, int64_t{16} << 20})
      grid.push_back({threshold, per_rank * size});
  return grid;
}

void Autotuner::record(int64_t bytes, double seconds) {
  if (done_ || bytes <= 0) return;
  trial_bytes_ += bytes;
  trial_seconds_ += seconds;
  if (trial_bytes_ < bytes_per_trial_) return;

  score_[current_] = trial_seconds_ > 0 ? trial_bytes_ / trial_seconds_ : 0;
  char line[160];
  std::snprintf(line, sizeof line, "%zu,%lld,%lld,%lld,%.6f,%.3f", current_,
                static_cast<long long>(candidates_[current_].fusion_threshold_bytes),
                static_cast<long long>(candidates_[current_].chunk_bytes),
                static_cast<long long>(trial_bytes_), trial_seconds_, score_[current_] / 1e9);
  log_.emplace_back(line);
  trial_bytes_ = 0;
  trial_seconds_ = 0;
  if (++current_ < candidates_.size()) return;
  current_ = static_cast<std::size_t>(std::max_element(score_.begin(), score_.end()) - score_.begin());
  done_ = true;
}

}  // namespace kolo
