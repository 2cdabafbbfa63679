// Data-parallel training of the MNIST conv net (kolo::models::mnist_convnet) on
// Fashion-MNIST, or on any folder of MNIST-format IDX files (--data-dir):
//
//   mpirun -np 2 build/examples/mnist/mnist            # 5 epochs, 1.5 to 2.5 minutes on 2 cores
//   mpirun -np 2 build/examples/mnist/mnist --epochs 15 --metrics-csv run.csv
//
// Each rank trains on its share of every epoch (DistributedSampler) with its own batch of
// --batch-size images; the gradients are averaged across ranks at every step, so the ranks
// stay identical. The learning rate is scaled by the number of ranks (with a warmup), so
// a run at any number of ranks reaches about the same accuracy. Rank 0 prints one line per
// epoch (val_acc is the test set's accuracy, evaluated by all ranks together), then a summary.
#include <chrono>
#include <cstdio>
#include <deque>

#include "common/dataset_tools.h"
#include "common/example_main.h"
#include "common/fail_together.h"
#include "common/format.h"
#include "common/elastic_run.h"
#include "common/training_run.h"

using namespace kolo::examples;
namespace models = kolo::models;

namespace {

struct DataFlags {
  std::string folder = models::default_fashion_mnist_folder();
  DataLimits limits;
};

// Both splits, read by every rank (they are small); an error names the folder and says
// where Fashion-MNIST comes from.
void load(const DataFlags& flags, models::Dataset& train, models::Dataset& test) {
  try {
    train = models::load_mnist_folder(flags.folder, "train");
    test = models::load_mnist_folder(flags.folder, "t10k");
  } catch (const kolo::Error& e) {
    throw kolo::Error(e.code(), std::string(e.what()) + "\n  (--data-dir takes a folder of MNIST-format files: " +
                                    "train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz], t10k-...; " +
                                    "Fashion-MNIST is in Debian's dataset-fashion-mnist package, in " +
                                    models::default_fashion_mnist_folder() + ")");
  }
  for (const auto& [split, set] : {std::pair<const char*, const models::Dataset&>{"train", train}, {"t10k", test}}) {
    if (set.channels != 1 || set.height != 28 || set.width != 28)
      throw kolo::Error(kolo::StatusCode::InvalidArgument,
                        flags.folder + ": the MNIST net needs 28x28 grey images, and the " + split + " images are " +
                            std::to_string(set.channels) + "x" + std::to_string(set.height) + "x" +
                            std::to_string(set.width));
  }
  keep_first(train, flags.limits.train);
  keep_first(test, flags.limits.test);
}

int train_mnist(int argc, char** argv) {
  const auto start = std::chrono::steady_clock::now();
  CLI::App app{"Trains the MNIST conv net on Fashion-MNIST (or other MNIST-format data) on every rank of an "
               "MPI job: mpirun -np 2 mnist"};
  TrainingFlags flags{.epochs = 5, .batch_size = 64, .warmup_epochs = 1};
  DataFlags data;
  add_training_flags(app, flags);
  app.add_option("--data-dir", data.folder, "folder with the IDX files (plain or .gz)")->capture_default_str();
  add_data_limit_flags(app, data.limits);
  if (std::optional<int> status = parse_flags(app, argc, argv)) return *status;
  models::set_num_threads(threads_per_rank(flags));
  const bool root = models::is_root();

  models::Dataset train, test;
  fail_together([&] { load(data, train, test); });
  const MeanStd stats = pixel_mean_std(train);
  models::LoaderOptions loading;
  loading.batch_size = flags.batch_size;
  loading.mean = {stats.mean};
  loading.stddev = {stats.stddev};
  loading.seed = flags.seed;
  models::DistributedSampler sampler(train.count, kolo::rank(), kolo::size(), /*shuffle=*/true, flags.seed);
  models::DataLoader train_loader(train, sampler, loading);
  models::LoaderOptions evaluating = loading;
  evaluating.batch_size = 250;
  Evaluator evaluator(test, evaluating);

  std::unique_ptr<models::Net> net = models::mnist_convnet(train.classes);
  models::initialize(*net, flags.seed);
  std::unique_ptr<models::Optimizer> optimizer = make_optimizer(flags, net->parameters());
  if (root) {
    std::printf("mnist: %s: %s training and %s test images; %s (%s parameters)\n", data.folder.c_str(),
                with_thousands(train.count).c_str(), with_thousands(test.count).c_str(), net->name.c_str(),
                with_thousands(net->parameter_count()).c_str());
    std::printf("%s\n", describe_run(flags).c_str());
    std::fflush(stdout);
  }

  TrainingRun run{.net = *net,
                  .optimizer = *optimizer,
                  .train = train_loader,
                  .test = evaluator,
                  .flags = flags,
                  .metadata = run_metadata("mnist", flags)};
  // An elastic run makes its loaders again for each round's ranks.
  std::deque<models::DistributedSampler> round_samplers;  // each loader's, kept while it may read it
  const ElasticParts elastic{
      .make_train = [&] {
        round_samplers.emplace_back(train.count, kolo::rank(), kolo::size(), /*shuffle=*/true, flags.seed);
        return std::make_unique<models::DataLoader>(train, round_samplers.back(), loading);
      },
      .make_test = [&] { return std::make_unique<Evaluator>(test, evaluating); }};
  const TrainingResult result = flags.elastic ? run_elastic_training(run, elastic) : run_training(run);
  print_summary(run, result, start);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return example_main("mnist", argc, argv, train_mnist); }
