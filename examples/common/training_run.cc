#include "common/training_run.h"

#include <cmath>
#include <cstdio>

#include "common/checkpoint_dir.h"
#include "common/device.h"
#include "common/fail_together.h"
#include "common/format.h"
#include "common/metrics_csv.h"

namespace kolo::examples {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void print_phases(const PhaseSeconds& p) {
  const double total = p.total() > 0 ? p.total() : 1;
  std::printf("time on rank 0: data %.1f%% - forward %.1f%% - backward %.1f%% - gradient wait + update %.1f%% "
              "(of %s)\n",
              100 * p.data / total, 100 * p.forward / total, 100 * p.backward / total, 100 * p.update / total,
              duration_string(p.total()).c_str());
}

}  // namespace

std::map<std::string, std::string> run_metadata(const std::string& program, const TrainingFlags& f) {
  return {{"program", program},
          {"ranks", std::to_string(kolo::size())},
          {"batch_size", std::to_string(f.batch_size)},
          {"seed", std::to_string(f.seed)},
          {"epochs", std::to_string(f.epochs)},
          {"optimizer", f.optimizer},
          {"lr", std::to_string(base_lr(f))},
          {"warmup_epochs", std::to_string(f.warmup_epochs)},
          {"schedule", f.schedule}};
}

EpochReport epoch_report(const EpochStats& stats, int64_t epoch, int64_t epochs, double val_acc, double seconds) {
  return {.epoch = epoch + 1,
          .epochs = epochs,
          .steps = stats.steps,
          .seconds = seconds,
          .loss = stats.loss,
          .acc = stats.acc,
          .val_acc = val_acc,
          .images_per_s = stats.images / stats.seconds,
          .lr = stats.lr};
}

TrainingResult run_training(TrainingRun& run) {
  const TrainingFlags& flags = run.flags;
  const bool root = models::is_root();
  const CheckpointDir checkpoints(flags.checkpoint_dir);
  TrainingResult result;
  Device device;
  fail_together([&] {
    device = training_device(flags.device);
    if (run.train.batches_per_epoch() == 0) {
      throw kolo::Error(kolo::StatusCode::InvalidArgument,
                        "each rank's share of the training set is smaller than one batch (--batch-size " +
                            std::to_string(flags.batch_size) + "): no step to train");
    }
  });
  if (!device.is_cpu()) {
    run.net.to(device);  // the optimizer's state follows its parameters at its first step
    // The runtime records each gradient's readiness on this stream, after its kernels.
    kolo::set_cuda_stream(models::compute_stream(device));
    if (root) std::printf("computing on cuda:%d\n", device.index);
  }
  // A new run must not mix its checkpoints with another run's: the newest would be the
  // other's, and --resume would continue that one.
  fail_together([&] {
    if (!root || !checkpoints.enabled()) return;
    checkpoints.prepare();
    if (flags.resume) return;
    const std::string newest = checkpoints.latest_path();
    if (newest.empty()) return;
    throw kolo::Error(kolo::StatusCode::InvalidArgument,
                      "--checkpoint-dir " + checkpoints.folder() + " holds checkpoints of another run (newest: " +
                          newest + "): pass --resume to continue it, or give a folder without checkpoints");
  });
  if (flags.resume) {
    result.first_epoch = resume_from_latest(checkpoints, run.net, run.optimizer, run.metadata);
    if (root) {
      if (result.first_epoch > 0) {
        std::printf("resumed from %s\n", checkpoints.latest_path().c_str());
      } else {
        std::printf("no checkpoint in %s: starting from the beginning\n", checkpoints.folder().c_str());
      }
    }
  }
  // Ranks start from rank 0's weights, as Horovod's broadcast_parameters callback does
  // (equal seeds already make them equal; this makes it so whatever the caller did).
  if (result.first_epoch == 0) models::broadcast_parameters(run.net, 0);
  MetricsCsv csv;
  fail_together([&] {
    if (root) csv = MetricsCsv(flags.metrics_csv, result.first_epoch);
  });
  Trainer trainer(run.net, run.optimizer, models::scaled_lr(base_lr(flags)), make_schedule(flags),
                  {.node_shared_update = flags.node_shared});
  ProgressBar progress(stdout, root && progress_wanted(flags));
  std::fflush(stdout);

  result.test_acc = -1;
  for (int64_t epoch = result.first_epoch; epoch < flags.epochs; ++epoch) {
    const auto epoch_start = std::chrono::steady_clock::now();
    progress.start("epoch " + std::to_string(epoch + 1) + "/" + std::to_string(flags.epochs),
                   run.train.batches_per_epoch());
    const EpochStats stats = trainer.train_epoch(run.train, epoch, progress);
    result.test_acc = run.test.accuracy(run.net);
    ++result.epochs_trained;
    result.train_seconds += stats.seconds;
    result.images += stats.images;
    result.phases += stats.phases;
    const EpochReport report = epoch_report(stats, epoch, flags.epochs, result.test_acc, seconds_since(epoch_start));
    result.epochs.push_back(report);
    progress.clear();
    if (root) {
      std::printf("%s\n", epoch_line(report).c_str());
      std::fflush(stdout);
    }
    fail_together([&] {
      if (!root) return;
      csv.append(report);
      if (checkpoints.enabled()) {
        models::Checkpoint checkpoint = models::make_checkpoint(run.net, &run.optimizer, epoch + 1);
        checkpoint.metadata = run.metadata;
        checkpoints.save(checkpoint);
      }
    });
    if (flags.stop_after_epoch == epoch + 1 && epoch + 1 < flags.epochs) {
      if (root) std::printf("stopping after epoch %lld (--stop-after-epoch)\n", static_cast<long long>(epoch + 1));
      result.stopped_early = true;
      return result;
    }
  }
  // A run resumed after its last epoch trains nothing; it still reports the accuracy.
  if (result.test_acc < 0) result.test_acc = run.test.accuracy(run.net);
  return result;
}

void print_summary(const TrainingRun& run, const TrainingResult& result, std::chrono::steady_clock::time_point start) {
  if (result.left_job || kolo::rank() != 0 || result.stopped_early) return;
  std::printf("test accuracy %.4f on %s images - %s in %s (total %s) - %s img/s - %s x %s\n", result.test_acc,
              with_thousands(run.test.samples()).c_str(),
              count_of(static_cast<double>(result.epochs_trained), "epoch").c_str(),
              duration_string(result.train_seconds).c_str(), duration_string(seconds_since(start)).c_str(),
              with_thousands(result.train_seconds > 0 ? std::llround(result.images / result.train_seconds) : 0).c_str(),
              count_of(kolo::size(), "rank").c_str(), count_of(models::num_threads(), "thread").c_str());
  if (run.flags.profile) print_phases(result.phases);
  std::fflush(stdout);
}

}  // namespace kolo::examples
