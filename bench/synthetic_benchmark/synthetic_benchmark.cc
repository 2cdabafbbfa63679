// The Horovod synthetic benchmark (horovod/examples/pytorch/pytorch_synthetic_benchmark.py)
// on kolo's model layer: every rank trains a net on one fixed random batch, gradients
// averaged by the DistributedOptimizer, and rank 0 prints images/s per iteration, then the
// mean per rank with its spread (1.96 standard deviations) and the total over the ranks:
//
//   mpirun -np 2 build/bench/synthetic_benchmark/synthetic_benchmark --model resnet18
//          --batch-size 32 --image-size 32 --num-iters 5
//
// As in Horovod's script the step is zero_grad, forward, cross-entropy, backward and a
// step of SGD (lr 0.01 x ranks); the times are rank 0's (the averaging keeps ranks in
// step); nothing but the step is timed: the batch never changes, so no data loading.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <optional>
#include <random>

#include <sys/resource.h>

#include "common/example_main.h"
#include "common/fail_together.h"
#include "common/format.h"
#include "common/training_flags.h"

using namespace kolo::examples;
namespace models = kolo::models;

namespace {

const std::vector<std::string> kModels = {"mnist_convnet", "resnet18",    "resnet34",    "resnet50",   "resnet101",
                                          "resnet152",     "resnet50v2",  "resnet101v2", "resnet152v2"};

struct BenchmarkFlags {
  std::string model = "resnet50";
  int64_t batch_size = 32;
  int64_t image_size = 0;  // 0: the model's usual (224, or 28 for the MNIST net)
  int64_t classes = 1000;
  int64_t warmup_batches = 10, batches_per_iter = 10, iters = 10;
  bool fp16_allreduce = false;
  bool sync_only = false;
  bool node_shared = false;
  int threads = 0;
  uint64_t seed = 1;
};

void add_flags(CLI::App& app, BenchmarkFlags& f) {
  app.add_option("--model", f.model)->check(CLI::IsMember(kModels))->capture_default_str();
  app.add_option("--batch-size", f.batch_size, "input batch size per rank")->check(kPositive)->capture_default_str();
  app.add_option("--image-size", f.image_size, "input height and width (default: 224; 28 for mnist_convnet)")
      ->check(kPositive);
  app.add_option("--classes", f.classes, "number of classes (default: 1000; 10 for mnist_convnet)")
      ->check(kPositive);
  app.add_option("--num-warmup-batches", f.warmup_batches, "number of warm-up batches that don't count towards "
                 "benchmark")->check(kNonNegative)->capture_default_str();
  app.add_option("--num-batches-per-iter", f.batches_per_iter, "number of batches per benchmark iteration")
      ->check(kPositive)->capture_default_str();
  app.add_option("--num-iters", f.iters, "number of benchmark iterations")->check(kPositive)->capture_default_str();
  app.add_flag("--fp16-allreduce", f.fp16_allreduce, "use fp16 compression during allreduce");
  app.add_flag("--sync-only", f.sync_only,
               "diagnostic: no gradient is averaged; the ranks allreduce one float per step instead, so they "
               "stay in step and no gradient byte moves (what synchronizing alone costs)");
  app.add_flag("--node-shared", f.node_shared,
               "average and update through memory the node's ranks share (DistributedOptions::node_shared_update) "
               "instead of an allreduce");
  app.add_option("--threads", f.threads, "compute threads per rank (default: cores / ranks on this machine)")
      ->check(kPositive);
  app.add_option("--seed", f.seed, "initial weights and the random batch")->capture_default_str();
}

// One batch of normal(0, 1) pixels and uniform labels, as torch.randn and random_() % classes.
struct RandomBatch {
  models::Tensor images;
  std::vector<int32_t> labels;
};

RandomBatch random_batch(const BenchmarkFlags& f, int64_t channels) {
  RandomBatch batch{models::Tensor({f.batch_size, channels, f.image_size, f.image_size}), {}};
  std::mt19937_64 rng(f.seed + static_cast<uint64_t>(kolo::rank()));
  std::normal_distribution<float> normal;
  for (int64_t i = 0; i < batch.images.numel(); ++i) batch.images[i] = normal(rng);
  for (int64_t i = 0; i < f.batch_size; ++i) batch.labels.push_back(static_cast<int32_t>(rng() % f.classes));
  return batch;
}

// CPU seconds this process has used so far, all its threads (compute and kolo's background thread).
double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

double mean_of(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / v.size(); }

// numpy's std: the population standard deviation.
double std_of(const std::vector<double>& v) {
  const double m = mean_of(v);
  double squares = 0;
  for (double x : v) squares += (x - m) * (x - m);
  return std::sqrt(squares / v.size());
}

int benchmark(int argc, char** argv) {
  CLI::App app{"Synthetic training benchmark (as Horovod's pytorch_synthetic_benchmark.py): "
               "mpirun -np 2 synthetic_benchmark --model resnet50"};
  BenchmarkFlags f;
  add_flags(app, f);
  if (std::optional<int> status = parse_flags(app, argc, argv)) return *status;
  const bool mnist = f.model == "mnist_convnet";
  if (f.image_size == 0) f.image_size = mnist ? 28 : 224;
  if (app.count("--classes") == 0 && mnist) f.classes = 10;
  fail_together([&] {
    if (f.sync_only && f.fp16_allreduce)
      throw kolo::Error(kolo::StatusCode::InvalidArgument,
                        "--sync-only averages no gradient, so --fp16-allreduce would compress nothing: give one of them");
    if (f.sync_only && f.node_shared)
      throw kolo::Error(kolo::StatusCode::InvalidArgument,
                        "--sync-only averages no gradient, so --node-shared would share nothing: give one of them");
    if (mnist && f.image_size != 28) {
      throw kolo::Error(kolo::StatusCode::InvalidArgument,
                        "--image-size " + std::to_string(f.image_size) + ": mnist_convnet takes 28x28 images only");
    }
  });
  models::set_num_threads(threads_per_rank(TrainingFlags{.threads = f.threads}));

  std::unique_ptr<models::Net> net = models::make_net(f.model, f.classes);
  models::initialize(*net, f.seed);
  const RandomBatch batch = random_batch(f, mnist ? 1 : 3);
  models::SGD sgd(net->parameters(), {.lr = models::scaled_lr(0.01)});
  // --sync-only leaves the DistributedOptimizer out: it would start averaging during backward.
  std::optional<models::DistributedOptimizer> optimizer;
  if (!f.sync_only) {
    optimizer.emplace(sgd, *net,
                      models::DistributedOptions{.compression = f.fp16_allreduce ? models::Compression::FP16
                                                                                 : models::Compression::None,
                                                 .node_shared_update = f.node_shared});
  }
  models::broadcast_parameters(*net, 0);
  models::broadcast_optimizer_state(sgd, 0);

  models::Tensor step_flag({1});
  auto step = [&] {
    optimizer ? optimizer->zero_grad() : sgd.zero_grad();
    const models::Tensor logits = net->forward(batch.images);
    net->backward(models::softmax_cross_entropy(logits, batch.labels).grad);
    if (optimizer) {
      optimizer->step();
    } else {  // each rank waits for the slower one, as the averaging makes it, with 4 bytes to move
      kolo::allreduce("synthetic_benchmark.step", step_flag.view());
      sgd.step();
    }
  };
  auto log = [](const std::string& line) { models::print_on_root(line); };
  char line[160];

  log("Model: " + f.model);
  log("Batch size: " + std::to_string(f.batch_size));
  std::snprintf(line, sizeof line, "Number of ranks: %d (%s each), images %lldx%lldx%lld, %lld classes%s%s%s",
                kolo::size(), count_of(models::num_threads(), "thread").c_str(), static_cast<long long>(mnist ? 1 : 3),
                static_cast<long long>(f.image_size), static_cast<long long>(f.image_size),
                static_cast<long long>(f.classes), f.fp16_allreduce ? ", fp16 allreduce" : "",
                f.sync_only ? ", sync only (no gradient averaged)" : "", f.node_shared ? ", node-shared update" : "");
  log(line);
  log("Running warmup...");
  for (int64_t i = 0; i < f.warmup_batches; ++i) step();
  log("Running benchmark...");
  std::vector<double> img_secs;
  const double cpu_start = cpu_seconds();
  for (int64_t iter = 0; iter < f.iters; ++iter) {
    const auto start = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < f.batches_per_iter; ++i) step();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    img_secs.push_back(static_cast<double>(f.batch_size * f.batches_per_iter) / seconds);
    std::snprintf(line, sizeof line, "Iter #%lld: %.1f img/sec per rank", static_cast<long long>(iter),
                  img_secs.back());
    log(line);
  }
  const double cpu_ms_per_image =
      1e3 * (cpu_seconds() - cpu_start) / static_cast<double>(f.batch_size * f.batches_per_iter * f.iters);
  const double mean = mean_of(img_secs), conf = 1.96 * std_of(img_secs);
  std::snprintf(line, sizeof line, "Img/sec per rank: %.1f +-%.1f", mean, conf);
  log(line);
  std::snprintf(line, sizeof line, "Total img/sec on %d rank(s): %.1f +-%.1f", kolo::size(), kolo::size() * mean,
                kolo::size() * conf);
  log(line);
  // Not in Horovod's output: what a timed image cost rank 0 in CPU time, which a busy
  // machine changes less than the wall time (overheads of the distribution show here).
  std::snprintf(line, sizeof line, "CPU time per image on rank 0: %.2f ms", cpu_ms_per_image);
  log(line);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return example_main("synthetic_benchmark", argc, argv, benchmark); }
