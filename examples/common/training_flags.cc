#include "common/training_flags.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <thread>

#include "common/format.h"
#include "common/terminal.h"

namespace kolo::examples {

namespace {

CLI::Validator number_check(bool zero_allowed) {
  return CLI::Validator(
      [zero_allowed](std::string& text) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value)) return "'" + text + "' is not a number";
        if (!std::isfinite(value)) return "must be a finite number, got " + text;
        if (value < 0 || (value == 0 && !zero_allowed)) {
          return std::string("must be ") + (zero_allowed ? "0 or more" : "positive") + ", got " + text;
        }
        return {};
      },
      zero_allowed ? "NONNEGATIVE" : "POSITIVE");
}

// Each optimizer's learning rate for one rank's batch when --lr is not given: base_lr()
// and --help both read this table, so the help cannot name another default.
struct DefaultLr {
  const char* optimizer;
  double lr;
};
constexpr DefaultLr kDefaultLr[] = {{"sgd", 0.01}, {"adam", 0.001}, {"adadelta", 1.0}};

std::string default_lr_text() {
  std::ostringstream text;
  for (const DefaultLr& d : kDefaultLr) text << (text.tellp() > 0 ? ", " : "") << d.lr << " " << d.optimizer;
  return text.str();
}

}  // namespace

const CLI::Validator kPositive = number_check(false);
const CLI::Validator kNonNegative = number_check(true);

void add_training_flags(CLI::App& app, TrainingFlags& f) {
  app.add_option("--epochs", f.epochs, "epochs to train")->check(kPositive)->capture_default_str();
  app.add_option("--batch-size", f.batch_size, "images per step on each rank")
      ->check(kPositive)->capture_default_str();
  app.add_option("--lr", f.lr,
                 "learning rate for one rank's batch, multiplied by the number of ranks "
                 "(default: " + default_lr_text() + ")")
      ->check(kPositive);
  app.add_option("--optimizer", f.optimizer)
      ->check(CLI::IsMember({"sgd", "adam", "adadelta"}))->capture_default_str();
  app.add_option("--momentum", f.momentum, "SGD momentum")->check(CLI::Range(0.0, 1.0))->capture_default_str();
  app.add_option("--warmup-epochs", f.warmup_epochs,
                 "epochs over which the rate rises from lr to lr x ranks (0: none)")
      ->check(kNonNegative)->capture_default_str();
  app.add_option("--schedule", f.schedule, "decay after warmup: cosine to 0 over the run, or constant")
      ->check(CLI::IsMember({"cosine", "constant"}))->capture_default_str();
  app.add_option("--seed", f.seed, "initial weights and data order")->capture_default_str();
  app.add_option("--threads", f.threads, "compute threads per rank (default: cores / ranks on this machine)")
      ->check(CLI::Range(1, 1024));
  CLI::Option* dir = app.add_option("--checkpoint-dir", f.checkpoint_dir,
                                    "save a checkpoint there after every epoch (the newest two are kept)");
  app.add_flag("--resume", f.resume, "continue from the newest checkpoint in --checkpoint-dir, if any")->needs(dir);
  CLI::Option* elastic = app.add_flag(
      "--elastic", f.elastic,
      "train as an elastic job (kolorun --min-np/--max-np/--host-discovery-script): go on when workers are lost, "
      "grow when hosts appear; the state is committed after each epoch");
  elastic->excludes(dir);
  app.add_option("--metrics-csv", f.metrics_csv, "write one CSV row per epoch to this file");
  app.add_option("--stop-after-epoch", f.stop_after_epoch,
                 "stop after this epoch and its checkpoint, as if interrupted (for testing --resume)")
      ->check(kPositive);
  app.add_option("--progress", f.progress, "progress bar: auto (when stdout is a terminal), on, off")
      ->check(CLI::IsMember({"auto", "on", "off"}))->capture_default_str();
  app.add_flag("--node-shared", f.node_shared,
               "average and update the gradients through memory the node's ranks share instead of an allreduce "
               "(one node, CPU: docs/distributed.md, \"Node-shared update\")");
  app.add_flag("--profile", f.profile, "print where the training time went (data, forward, backward, update)");
  app.add_option("--device", f.device, "where to compute: auto (this rank's GPU when one is visible), cpu, cuda, cuda:N")
      ->capture_default_str();
}

void add_data_limit_flags(CLI::App& app, DataLimits& limits) {
  app.add_option("--train-limit", limits.train, "train on the first N images only (0: all)")->check(kNonNegative);
  app.add_option("--test-limit", limits.test, "evaluate on the first N test images only (0: all)")
      ->check(kNonNegative);
}

std::optional<int> parse_flags(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (models::is_root()) return app.exit(e);
    return e.get_exit_code();
  }
  return std::nullopt;
}

double base_lr(const TrainingFlags& f) {
  if (f.lr > 0) return f.lr;
  for (const DefaultLr& d : kDefaultLr)
    if (f.optimizer == d.optimizer) return d.lr;
  return kDefaultLr[0].lr;  // --optimizer accepts only the names in the table
}

std::unique_ptr<models::Optimizer> make_optimizer(const TrainingFlags& f, std::vector<models::Parameter*> params) {
  const double lr = models::scaled_lr(base_lr(f));
  if (f.optimizer == "adam") return std::make_unique<models::Adam>(std::move(params), models::AdamOptions{.lr = lr});
  if (f.optimizer == "adadelta") {
    return std::make_unique<models::Adadelta>(std::move(params), models::AdadeltaOptions{.lr = lr});
  }
  return std::make_unique<models::SGD>(std::move(params), models::SgdOptions{.lr = lr, .momentum = f.momentum});
}

std::unique_ptr<models::LrSchedule> make_schedule(const TrainingFlags& f) {
  std::vector<std::unique_ptr<models::LrSchedule>> parts;
  if (f.warmup_epochs > 0 && kolo::size() > 1) parts.push_back(models::size_warmup(f.warmup_epochs));
  if (f.schedule == "cosine") parts.push_back(models::cosine_schedule(static_cast<double>(f.epochs)));
  return models::compose(std::move(parts));
}

int threads_per_rank(const TrainingFlags& f) {
  if (f.threads > 0) return f.threads;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, kolo::local_size()));
}

bool progress_wanted(const TrainingFlags& f) {
  if (f.progress == "on") return true;
  if (f.progress == "off") return false;
  return stdout_is_terminal();
}

std::string describe_optimization(const TrainingFlags& f) {
  std::ostringstream out;
  out << f.optimizer;
  if (f.optimizer == "sgd") out << " (momentum " << f.momentum << ")";
  const double lr = base_lr(f);
  out << ", lr " << models::scaled_lr(lr);
  if (kolo::size() > 1) out << " (" << lr << " x " << kolo::size() << " ranks)";
  if (f.warmup_epochs > 0 && kolo::size() > 1) out << ", warmup " << count_of(f.warmup_epochs, "epoch");
  if (f.schedule == "cosine") out << ", cosine decay";
  return out.str();
}

std::string describe_run(const TrainingFlags& f) {
  return count_of(kolo::size(), "rank") + " x " + count_of(models::num_threads(), "thread") + ", batch " +
         std::to_string(f.batch_size) + " per rank (" + std::to_string(f.batch_size * kolo::size()) + " in all), " +
         describe_optimization(f) + ", " + count_of(static_cast<double>(f.epochs), "epoch");
}

}  // namespace kolo::examples
