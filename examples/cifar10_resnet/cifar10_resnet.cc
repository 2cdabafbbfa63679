// Data-parallel training of a ResNet on CIFAR-10, the seeds' experiment: ResNet50V2 or
// ResNet152V2 (Keras layout) or the v1 ResNets (torchvision layout), on CIFAR-10 images
// resized to --image-size (the seeds: 128x128, batch 256 per GPU, lr x ranks):
//
//   mpirun -np 2 build/examples/cifar10_resnet/cifar10_resnet --data-dir cifar-10-batches-bin
//   mpirun -np 2 build/examples/cifar10_resnet/cifar10_resnet --model resnet18 --image-size 32
//          --batch-size 32 --steps-per-epoch 20        (synthetic data, a short run)
//
// Without --data-dir it trains on synthetic images of CIFAR-10's shape and says so, so the
// times (per epoch, images/s) are real but the accuracies are chance. Each rank trains on
// its share of every epoch with --batch-size images per step, augmented (random flip and
// crop, then the resize); the DistributedOptimizer averages the gradients, the learning
// rate is scaled by the ranks with a warmup. Rank 0 prints one line per epoch, a summary,
// and a table of the epochs as in the seeds' reports.
#include <chrono>
#include <cstdio>

#include "cifar10_resnet/cifar10_data.h"
#include "cifar10_resnet/epoch_table.h"
#include "common/example_main.h"
#include "common/fail_together.h"
#include "common/format.h"
#include "common/training_run.h"

using namespace kolo::examples;
namespace models = kolo::models;

namespace {

const std::vector<std::string> kModels = {"resnet50v2", "resnet101v2", "resnet152v2", "resnet18",
                                          "resnet34",   "resnet50",    "resnet101",   "resnet152"};

struct CifarFlags {
  std::string data_dir;  // empty: synthetic
  std::string model = "resnet50v2";
  int64_t image_size = 128;
  DataLimits limits;  // synthetic data: how many images to make
  int64_t steps_per_epoch = 0;
  bool no_augment = false;
};

void add_cifar_flags(CLI::App& app, CifarFlags& f) {
  app.add_option("--data-dir", f.data_dir,
                 "folder with CIFAR-10's binary files (data_batch_1..5.bin, test_batch.bin); "
                 "none: synthetic data of the same shape, 50,000 + 10,000 images or --train-limit/--test-limit");
  app.add_option("--model", f.model)->check(CLI::IsMember(kModels))->capture_default_str();
  app.add_option("--image-size", f.image_size, "images are resized (bilinear) to this height and width")
      ->check(CLI::Range(1, 1024))->capture_default_str();
  add_data_limit_flags(app, f.limits);
  app.add_option("--steps-per-epoch", f.steps_per_epoch,
                 "epochs of N steps, on the first N x batch x ranks training images")
      ->check(kPositive)->excludes("--train-limit");
  app.add_flag("--no-augment", f.no_augment, "no random flip and crop");
}

models::LoaderOptions loader_options(const CifarFlags& cifar, const TrainingFlags& flags, bool augment) {
  models::LoaderOptions options;
  options.batch_size = flags.batch_size;
  options.random_flip = augment;
  options.random_crop_padding = augment ? 4 : -1;  // on the 32x32 image, before the resize
  options.resize_to = cifar.image_size == 32 ? 0 : cifar.image_size;
  options.mean = cifar10_mean();
  options.stddev = cifar10_stddev();
  options.seed = flags.seed;
  return options;
}

void print_header(const CifarData& data, const CifarFlags& cifar, const TrainingFlags& flags, models::Net& net) {
  std::printf("cifar10_resnet: %s\n", data.origin.c_str());
  std::printf("%s training and %s test images; %s (%s parameters) on 3x%lldx%lld inputs%s; augmentation: %s\n",
              with_thousands(data.train.count).c_str(), with_thousands(data.test.count).c_str(), net.name.c_str(),
              with_thousands(net.parameter_count()).c_str(), static_cast<long long>(cifar.image_size),
              static_cast<long long>(cifar.image_size), cifar.image_size == 32 ? "" : " (resized from 32x32)",
              cifar.no_augment ? "none" : "random flip, random crop (padding 4)");
  std::printf("%s\n", describe_run(flags).c_str());
  std::fflush(stdout);
}

int train_cifar10(int argc, char** argv) {
  const auto start = std::chrono::steady_clock::now();
  CLI::App app{"Trains a ResNet on CIFAR-10 (or synthetic data of its shape) on every rank of an MPI job: "
               "mpirun -np 2 cifar10_resnet [--data-dir cifar-10-batches-bin]"};
  // The seeds' settings: batch 256 per rank, lr 0.1 for it (x ranks), 128x128 inputs.
  TrainingFlags flags{.epochs = 3, .batch_size = 256, .warmup_epochs = 1};
  CifarFlags cifar;
  add_training_flags(app, flags);
  app.get_option("--lr")->description(
      "learning rate for one rank's batch, multiplied by the number of ranks (default: sgd 0.1 x batch / 256, "
      "adam 0.001, adadelta 1.0)");
  add_cifar_flags(app, cifar);
  if (std::optional<int> status = parse_flags(app, argc, argv)) return *status;
  // Without --lr: 0.1 per 256 images of a rank's batch (Goyal et al.'s linear rule).
  if (flags.lr == 0 && flags.optimizer == "sgd") flags.lr = 0.1 * static_cast<double>(flags.batch_size) / 256;
  models::set_num_threads(threads_per_rank(flags));
  const bool root = models::is_root();

  // --steps-per-epoch N: the first N x batch x ranks training images, which must exist (and
  // fit in memory, for synthetic data).
  constexpr int64_t kMostImages = int64_t(1) << 31;
  const int64_t images_per_step = flags.batch_size * kolo::size();
  fail_together([&] {
    if (cifar.steps_per_epoch > kMostImages / images_per_step)
      throw kolo::Error(kolo::StatusCode::InvalidArgument,
                        "--steps-per-epoch " + std::to_string(cifar.steps_per_epoch) + ": " +
                            std::to_string(images_per_step) + " images a step makes more than 2^31 images an epoch");
  });
  if (cifar.steps_per_epoch > 0) cifar.limits.train = cifar.steps_per_epoch * images_per_step;
  CifarData data;
  fail_together([&] {
    data = load_cifar10_or_synthetic(cifar.data_dir, cifar.limits.train, cifar.limits.test, flags.seed);
    if (cifar.steps_per_epoch > 0 && data.train.count < cifar.limits.train)
      throw kolo::Error(kolo::StatusCode::InvalidArgument,
                        "--steps-per-epoch " + std::to_string(cifar.steps_per_epoch) + " needs " +
                            with_thousands(cifar.limits.train) + " training images (" +
                            std::to_string(images_per_step) + " a step), and " + cifar.data_dir + " has " +
                            with_thousands(data.train.count));
  });
  models::DistributedSampler sampler(data.train.count, kolo::rank(), kolo::size(), /*shuffle=*/true, flags.seed);
  models::DataLoader train_loader(data.train, sampler, loader_options(cifar, flags, !cifar.no_augment));
  Evaluator evaluator(data.test, loader_options(cifar, flags, /*augment=*/false));

  std::unique_ptr<models::Net> net;
  fail_together([&] { net = models::make_net(cifar.model, data.train.classes); });
  models::initialize(*net, flags.seed);
  std::unique_ptr<models::Optimizer> optimizer = make_optimizer(flags, net->parameters());
  if (root) print_header(data, cifar, flags, *net);

  std::map<std::string, std::string> metadata = run_metadata("cifar10_resnet", flags);
  metadata["model"] = cifar.model;
  metadata["image_size"] = std::to_string(cifar.image_size);
  metadata["data"] = data.synthetic ? "synthetic" : cifar.data_dir;
  TrainingRun run{.net = *net,
                  .optimizer = *optimizer,
                  .train = train_loader,
                  .test = evaluator,
                  .flags = flags,
                  .metadata = std::move(metadata)};
  const TrainingResult result = run_training(run);
  print_summary(run, result, start);
  if (root && !result.stopped_early) print_epoch_table(result.epochs, data.synthetic);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return example_main("cifar10_resnet", argc, argv, train_cifar10); }
