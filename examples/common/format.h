// Number and duration formatting for the examples' console output.
#pragma once

#include <cstdint>
#include <string>

namespace kolo::examples {

// 10700 -> "10,700".
std::string with_thousands(int64_t value);
// (1, "epoch") -> "1 epoch", (8, "epoch") -> "8 epochs".
std::string count_of(double count, const std::string& noun);
// 11.24 -> "11.2s", 125 -> "2m05s", 3725 -> "1h02m05s".
std::string duration_string(double seconds);

// One Keras-like line per epoch:
//   epoch 3/8 - 600 steps - 11.2s - loss 0.3100 - acc 0.8900 - val_acc 0.8800 - 10,700 img/s
struct EpochReport {
  int64_t epoch = 0, epochs = 0;  // 1-based
  int64_t steps = 0;              // optimizer steps (each over every rank's batch)
  double seconds = 0;             // wall time of the epoch: training and validation
  double loss = 0, acc = 0;       // training means over the epoch and all ranks
  double val_acc = -1;            // < 0: no validation
  double images_per_s = 0;        // training images (all ranks) per second of training
  double lr = 0;                  // learning rate at the end of the epoch (CSV only)
};
std::string epoch_line(const EpochReport& report);

}  // namespace kolo::examples
