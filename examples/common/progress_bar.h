// A one-line progress bar for an epoch, redrawn in place ("\r") at most ten times a second:
//   epoch 3/8   312/469 [=============>.......] 5.1s - loss 0.3312 - acc 0.8801
// Disabled, it prints nothing, so callers need no conditions around it.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace kolo::examples {

class ProgressBar {
 public:
  ProgressBar(std::FILE* out, bool enabled) : out_(out), enabled_(enabled) {}
  bool enabled() const { return enabled_; }

  void start(std::string label, int64_t total_steps);
  // done of total_steps finished; loss and acc are this rank's running means.
  void update(int64_t done, double loss, double acc);
  // Erases the bar, so that the epoch's summary line takes its place.
  void clear();

 private:
  std::FILE* out_;
  bool enabled_;
  std::string label_;
  int64_t total_ = 0;
  std::size_t drawn_width_ = 0;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace kolo::examples
