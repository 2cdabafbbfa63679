// The per-epoch metrics as CSV, one row per epoch, written by rank 0:
//   epoch,steps,seconds,lr,loss,acc,val_acc,images_per_s
#pragma once

#include <cstdint>
#include <string>

#include "common/format.h"

namespace kolo::examples {

class MetricsCsv {
 public:
  MetricsCsv() = default;  // writes nothing
  // Starts the file with its header. A run resumed after `completed_epochs` > 0 keeps the
  // existing file's rows for those epochs (and drops later ones, which the run redoes), so
  // the file reads as one uninterrupted run. Throws kolo::Error naming the file on failure.
  MetricsCsv(std::string path, int64_t completed_epochs);
  void append(const EpochReport& report);  // throws kolo::Error naming the file on failure

 private:
  std::string path_;
};

}  // namespace kolo::examples
