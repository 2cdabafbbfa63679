// The command-line flags every training example shares (CLI11), and what they make: the
// optimizer, the learning-rate schedule, the number of compute threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "kolo/models.h"

namespace kolo::examples {

// Each example sets its own defaults before add_training_flags().
struct TrainingFlags {
  int64_t epochs = 1;
  int64_t batch_size = 64;      // per rank
  double lr = 0;                // per rank's batch, before scaling by ranks; 0: the optimizer's default
  std::string optimizer = "sgd";
  double momentum = 0.9;        // SGD only
  double warmup_epochs = 1;     // from lr to lr × ranks (Goyal et al.)
  std::string schedule = "cosine";
  uint64_t seed = 1;
  int threads = 0;              // per rank; 0: the cores of this machine shared among its ranks
  std::string checkpoint_dir = {};
  bool resume = false;
  bool elastic = false;         // an elastic job's worker (common/elastic_run.h)
  std::string metrics_csv = {};
  int64_t stop_after_epoch = 0;  // > 0: stop after this epoch (and its checkpoint)
  std::string progress = "auto";
  bool profile = false;
  // common/device.h. The CPU until the GPU path has run on a GPU; then auto.
  std::string device = "cpu";
  bool node_shared = false;     // DistributedOptions::node_shared_update
};

void add_training_flags(CLI::App& app, TrainingFlags& flags);

// --train-limit and --test-limit: use the first N images of each split (0: all of them;
// apply with keep_first()).
struct DataLimits {
  int64_t train = 0, test = 0;
};
void add_data_limit_flags(CLI::App& app, DataLimits& limits);

// Checks for numeric flags whose messages name the problem ("'abc' is not a number",
// "must be positive, got 0"); CLI11's own speak of a range up to 1.8e308.
extern const CLI::Validator kPositive;
extern const CLI::Validator kNonNegative;

// Parses on every rank (they all see the same arguments); only rank 0 prints the help or
// the error. Returns the exit status when the program should stop there.
std::optional<int> parse_flags(CLI::App& app, int argc, char** argv);

// The base learning rate before scaling: --lr, or the optimizer's usual one.
double base_lr(const TrainingFlags& flags);
std::unique_ptr<models::Optimizer> make_optimizer(const TrainingFlags& flags, std::vector<models::Parameter*> params);
// Warmup (over ranks > 1) times the decay schedule, as a multiplier of the scaled rate.
std::unique_ptr<models::LrSchedule> make_schedule(const TrainingFlags& flags);
// --threads, or this machine's cores divided among the ranks on it.
int threads_per_rank(const TrainingFlags& flags);
// Whether rank 0 draws a progress bar: --progress on/off, or auto (stdout is a terminal).
bool progress_wanted(const TrainingFlags& flags);
// One line describing the optimizer and schedule: "sgd (momentum 0.9), lr 0.02 (0.01 × 2
// ranks), warmup 1 epoch, cosine decay".
std::string describe_optimization(const TrainingFlags& flags);
// The run in one line: "2 ranks x 1 thread, batch 64 per rank (128 in all), <optimization>,
// 6 epochs" (after set_num_threads).
std::string describe_run(const TrainingFlags& flags);

}  // namespace kolo::examples
