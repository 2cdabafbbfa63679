// KOLO_AUTOTUNE=1: rank 0 tries each candidate setting (fusion threshold, allreduce
// pipeline piece) on the live workload for a trial's worth of bytes, scores it by bytes
// reduced per second of communication, and settles on the best. Like Horovod's
// HOROVOD_AUTOTUNE, but a plain grid search: the space is small and each trial cheap.
// The chosen index reaches the other ranks inside the negotiation allreduce, so every
// rank switches settings in the same cycle.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kolo {

// How many allreduced bytes one candidate setting is tried on.
inline constexpr int64_t kAutotuneBytesPerTrial = int64_t{128} << 20;

struct TunedSetting {
  int64_t fusion_threshold_bytes = 0;
  int64_t chunk_bytes = 0;
};

class Autotuner {
 public:
  Autotuner(std::vector<TunedSetting> candidates, int64_t bytes_per_trial);

  // The grid kolo searches for a job of `size` ranks.
  static std::vector<TunedSetting> default_candidates(int size);

  std::size_t current() const { return current_; }
  const TunedSetting& setting(std::size_t index) const { return candidates_.at(index); }
  bool done() const { return done_; }

  // Records one cycle's allreduce work under the current setting.
  void record(int64_t bytes, double seconds);
  // One CSV line per finished trial: index,fusion_threshold,chunk,bytes,seconds,GB/s.
  const std::vector<std::string>& log() const { return log_; }

 private:
  std::vector<TunedSetting> candidates_;
  int64_t bytes_per_trial_;
  std::vector<double> score_;  // bytes per second, per candidate
  std::size_t current_ = 0;
  int64_t trial_bytes_ = 0;
  double trial_seconds_ = 0;
  bool done_ = false;
  std::vector<std::string> log_;
};

}  // namespace kolo
