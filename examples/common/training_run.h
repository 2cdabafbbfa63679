// A whole training run around Trainer: check that an epoch has a full batch, resume from
// the newest checkpoint if asked, then for each epoch train, evaluate, print the epoch line
// (rank 0), append the CSV row and save a checkpoint; at the end print the summary.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "common/evaluator.h"
#include "common/format.h"
#include "common/trainer.h"
#include "common/training_flags.h"
#include "kolo/models.h"

namespace kolo::examples {

struct TrainingRun {
  models::Net& net;
  models::Optimizer& optimizer;  // over net's parameters, made by make_optimizer()
  models::DataLoader& train;
  Evaluator& test;
  const TrainingFlags& flags;
  // Stored in every checkpoint; on --resume, differences are warned about. Describe what
  // makes a run repeatable: ranks, batch size, seed, epochs, optimizer...
  std::map<std::string, std::string> metadata;
};

struct TrainingResult {
  bool stopped_early = false;  // --stop-after-epoch
  int64_t first_epoch = 0;     // 0-based: the epochs a resumed run skipped
  int64_t epochs_trained = 0;  // by this run
  double test_acc = 0;         // after the last epoch
  double train_seconds = 0;    // training only
  int64_t images = 0;          // trained on by this run, all ranks together
  PhaseSeconds phases;         // rank 0's
  std::vector<EpochReport> epochs;  // the epoch lines of this run, for reports after it
  bool left_job = false;  // an elastic worker that kolorun told to leave: kolo is shut down
};

TrainingResult run_training(TrainingRun& run);

// The epoch line's numbers for epoch `epoch` (0-based) from what the trainer measured, the
// validation accuracy and the epoch's wall time.
EpochReport epoch_report(const EpochStats& stats, int64_t epoch, int64_t epochs, double val_acc, double seconds);

// The last lines, on rank 0: test accuracy, times, throughput, ranks and threads, and with
// --profile where the training time went.
void print_summary(const TrainingRun& run, const TrainingResult& result, std::chrono::steady_clock::time_point start);

// The metadata every example records: ranks, batch size, seed, epochs, optimizer, lr...
std::map<std::string, std::string> run_metadata(const std::string& program, const TrainingFlags& flags);

}  // namespace kolo::examples
