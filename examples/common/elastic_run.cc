#include "common/elastic_run.h"

#include <cstdio>

#include "kolo/elastic.h"

namespace kolo::examples {
namespace {

class EpochState final : public elastic::State {
 public:
  EpochState(models::Net& net, models::Optimizer& optimizer) : net_(net), optimizer_(optimizer) { save(); }

  int64_t epoch = 0;

  void save() override { saved_ = models::make_checkpoint(net_, &optimizer_, epoch); }
  void restore() override {
    models::restore(saved_, net_, &optimizer_);
    epoch = saved_.epoch;
  }
  // Rank 0 is the longest-serving worker: its state is the newest.
  void sync() override {
    models::broadcast_parameters(net_, 0);
    models::broadcast_optimizer_state(optimizer_, 0);
    std::vector<int64_t> e{epoch};
    kolo::broadcast_async("elastic/epoch", kolo::view(e), 0).wait().throw_if_error();
    epoch = e[0];
  }

 private:
  models::Net& net_;
  models::Optimizer& optimizer_;
  models::Checkpoint saved_;
};

// Trains until the last epoch, across resets (kolo/elastic.h), into `result`.
void train_elastic(TrainingRun& run, const ElasticParts& parts, EpochState& state, TrainingResult& result) {
  const TrainingFlags& flags = run.flags;
  ProgressBar progress(stdout, false);
  elastic::run(state, [&] {
    const bool root = models::is_root();
    std::unique_ptr<models::DataLoader> train = parts.make_train();
    std::unique_ptr<Evaluator> test = parts.make_test();
    Trainer trainer(run.net, run.optimizer, models::scaled_lr(base_lr(flags)), make_schedule(flags),
                    {.node_shared_update = flags.node_shared});
    if (root && state.epoch < flags.epochs)
      std::printf("training on %d ranks from epoch %lld\n", kolo::size(), static_cast<long long>(state.epoch + 1));
    while (state.epoch < flags.epochs) {
      const auto epoch_start = std::chrono::steady_clock::now();
      const EpochStats stats = trainer.train_epoch(*train, state.epoch, progress);
      result.test_acc = test->accuracy(run.net);
      ++result.epochs_trained;
      result.train_seconds += stats.seconds;
      result.images += stats.images;
      const EpochReport report =
          epoch_report(stats, state.epoch, flags.epochs, result.test_acc,
                       std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_start).count());
      result.epochs.push_back(report);
      if (root) {
        std::printf("%s - %d ranks\n", epoch_line(report).c_str(), kolo::size());
        std::fflush(stdout);
      }
      ++state.epoch;
      state.commit();
    }
  });
}

}  // namespace

TrainingResult run_elastic_training(TrainingRun& run, const ElasticParts& parts) {
  EpochState state(run.net, run.optimizer);
  TrainingResult result;
  try {
    train_elastic(run, parts, state, result);
  } catch (const Error& e) {
    // reset() found that kolorun does not want this worker any more (its host was removed,
    // or another worker finished the job): not a failure. kolo is shut down then.
    if (e.code() != StatusCode::Aborted || kolo::is_initialized()) throw;
    std::printf("this worker leaves the job: %s\n", e.what());
    std::fflush(stdout);
    result.left_job = true;
  }
  return result;
}

}  // namespace kolo::examples
