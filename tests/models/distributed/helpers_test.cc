// The small helpers of distributed training: learning-rate scaling and warmup, metric
// averaging, and rank 0's printing and checkpointing.
#include <filesystem>

#include <unistd.h>

#include "dist_util.h"

using namespace kolo_dist_test;
using kolo_test::rank;
using kolo_test::size;

TEST_CASE("scaled_lr and size_warmup follow Goyal et al.: base × size, warmed up from base",
          "[distributed][helpers]") {
  CHECK(scaled_lr(0.1) == Approx(0.1 * size()));
  const auto warmup = size_warmup(2.0);
  const double n = size();
  CHECK(warmup->factor(0) == Approx(1 / n));          // scaled rate × 1/size = the base rate
  CHECK(warmup->factor(1) == Approx(1 / n + (1 - 1 / n) / 2));
  CHECK(warmup->factor(2) == Approx(1.0));
  CHECK(warmup->factor(7) == Approx(1.0));
}

TEST_CASE("average_metric: the mean of every rank's value", "[distributed][helpers]") {
  CHECK(average_metric(rank(), "rank") == Approx((size() - 1) / 2.0));
  CHECK(average_metric(1.5, "constant") == Approx(1.5));
}

TEST_CASE("is_root, print_on_root and save_checkpoint_on_root act on rank 0 only", "[distributed][helpers]") {
  CHECK(is_root() == (rank() == 0));
  print_on_root("print_on_root: printed once, by rank 0");

  // One folder for the job: rank 0's pid, broadcast.
  std::vector<int64_t> id{::getpid()};
  kolo::broadcast("test/checkpoint_folder", kolo::view(id), 0);
  const auto folder = std::filesystem::temp_directory_path() / ("kolo_distributed_test." + std::to_string(id[0]));
  if (rank() == 0) std::filesystem::create_directories(folder);
  kolo_test::world_barrier();

  auto net = seeded_mnist(21);
  SGD sgd(net->parameters(), {.lr = 0.5});
  const std::string mine = (folder / ("rank" + std::to_string(rank()) + ".ckpt")).string();
  save_checkpoint_on_root(*net, &sgd, 4, mine);
  save_checkpoint_on_root([&] {
    Checkpoint c = make_checkpoint(*net, nullptr, 5);
    c.metadata["who"] = "root";
    return c;
  }, (folder / "shared.ckpt").string());
  kolo_test::world_barrier();

  CHECK(std::filesystem::exists(mine) == (rank() == 0));
  const Checkpoint shared = load_checkpoint((folder / "shared.ckpt").string());
  CHECK(shared.epoch == 5);
  CHECK(shared.metadata.at("who") == "root");
  if (rank() == 0) {
    const Checkpoint own = load_checkpoint(mine);
    CHECK(own.epoch == 4);
    CHECK(own.optimizer_name == "sgd");
  }
  kolo_test::world_barrier();
  if (rank() == 0) std::filesystem::remove_all(folder);
}
