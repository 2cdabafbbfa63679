// The training loop of one epoch, for any net and data set: batches from a DataLoader,
// forward, softmax cross-entropy, backward, and a step of the distributed optimizer, with
// the learning rate set from the schedule before every step.
#pragma once

#include <cstdint>
#include <memory>

#include "common/progress_bar.h"
#include "kolo/models.h"

namespace kolo::examples {

// Where this rank's training time went.
struct PhaseSeconds {
  double data = 0;      // waiting for the loader's next batch
  double forward = 0;   // forward, loss and accuracy
  double backward = 0;  // backward (gradients may already be on the wire meanwhile)
  double update = 0;    // waiting for the averaged gradients, then the optimizer's update
  PhaseSeconds& operator+=(const PhaseSeconds& other);
  double total() const { return data + forward + backward + update; }
};

struct EpochStats {
  int64_t steps = 0;
  int64_t images = 0;   // trained on, all ranks together
  double seconds = 0;   // wall time of the epoch's training
  double loss = 0, acc = 0;  // means over the steps and the ranks
  double lr = 0;        // the rate of the last step
  PhaseSeconds phases;  // this rank's
};

class Trainer {
 public:
  // scaled_lr: the rate for the global batch (already multiplied by the ranks); the
  // schedule multiplies it by a factor of the progress in epochs.
  Trainer(models::Net& net, models::Optimizer& optimizer, double scaled_lr,
          std::unique_ptr<models::LrSchedule> schedule, const models::DistributedOptions& options = {});
  // Trains on the loader's epoch `epoch` (0-based); the progress bar shows this rank's
  // running loss and accuracy (the caller starts it). Throws kolo::Error if the epoch has no full batch.
  EpochStats train_epoch(models::DataLoader& loader, int64_t epoch, ProgressBar& progress);

 private:
  models::Net& net_;
  models::DistributedOptimizer optimizer_;
  double scaled_lr_;
  std::unique_ptr<models::LrSchedule> schedule_;
};

}  // namespace kolo::examples
