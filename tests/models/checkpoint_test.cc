// Checkpoints of real nets: make_checkpoint / save / load / restore give back exactly the
// parameters, buffers, optimizer state, epoch and RNG states; restore refuses a checkpoint
// that does not fit; save_checkpoint is atomic and never leaves its temporary file behind.
// (The file format's corruption cases: checkpoint_format_test.cc.)
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <sstream>

#include "checkpoint_test_util.h"
#include "kolo/models.h"

using namespace kolo::models;
using namespace ckpt_test;
using kolo::StatusCode;

namespace {

// conv → BN → ReLU → pool → linear: a net with buffers (running stats and a 0-d counter).
std::unique_ptr<Net> bn_net() {
  auto net = std::make_unique<Net>();
  net->name = "bn_net";
  net->add("conv", std::make_unique<Conv2d>(Conv2dOptions{.in_channels = 1, .out_channels = 4, .kernel = 3, .padding = 1, .bias = false}));
  net->add("bn", std::make_unique<BatchNorm2d>(BatchNormOptions{.channels = 4}));
  net->add("relu", std::make_unique<ReLU>());
  net->add("pool", std::make_unique<GlobalAvgPool>());
  net->add("fc", std::make_unique<Linear>(4, 3));
  return net;
}

// One training step on a batch drawn from `seed`.
void train_step(Net& net, Optimizer& optimizer, int64_t classes, int64_t side, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  Tensor images({4, 1, side, side});
  for (int64_t i = 0; i < images.numel(); ++i) images[i] = normal(rng);
  std::vector<int32_t> labels;
  for (int i = 0; i < 4; ++i) labels.push_back(static_cast<int32_t>(rng() % static_cast<uint64_t>(classes)));
  optimizer.zero_grad();
  LossResult loss = softmax_cross_entropy(net.forward(images), labels);
  net.backward(loss.grad);
  optimizer.step();
}

bool same_values(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), sizeof(float) * a.numel()) == 0;
}

void check_same_net(Net& a, Net& b) {
  auto pa = a.parameters(), pb = b.parameters();
  REQUIRE(pa.size() == pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) {
    INFO(pa[i]->name);
    CHECK(same_values(pa[i]->value, pb[i]->value));
  }
  auto ba = a.buffers(), bb = b.buffers();
  REQUIRE(ba.size() == bb.size());
  for (std::size_t i = 0; i < ba.size(); ++i) {
    INFO(ba[i].first);
    CHECK(same_values(*ba[i].second, *bb[i].second));
  }
}

std::string rng_text(const std::mt19937_64& rng) {
  std::ostringstream out;
  out << rng;
  return out.str();
}

void check_same_checkpoint(const Checkpoint& a, const Checkpoint& b) {
  CHECK(a.shapes == b.shapes);
  CHECK(a.tensors == b.tensors);
  CHECK(a.optimizer_name == b.optimizer_name);
  CHECK(a.optimizer.tensors == b.optimizer.tensors);
  CHECK(a.optimizer.scalars == b.optimizer.scalars);
  CHECK(a.epoch == b.epoch);
  CHECK(a.rng == b.rng);
  CHECK(a.metadata == b.metadata);
}

}  // namespace

TEST_CASE("an MNIST net with SGD momentum survives save, load and restore exactly", "[checkpoint]") {
  TempDir dir;
  auto net = mnist_convnet();
  initialize(*net, 1);
  SGD sgd(net->parameters(), {.lr = 0.05, .momentum = 0.9, .weight_decay = 1e-4});
  train_step(*net, sgd, 10, 28, 100);

  std::mt19937_64 data_rng(42);
  data_rng.discard(1000);
  Checkpoint saved = make_checkpoint(*net, &sgd, 3);
  saved.rng["data"] = rng_text(data_rng);
  saved.metadata["model"] = net->name;
  save_checkpoint(saved, dir / "mnist.ckpt");
  CHECK(dir.temporaries().empty());

  const Checkpoint loaded = load_checkpoint(dir / "mnist.ckpt");
  check_same_checkpoint(saved, loaded);
  CHECK(loaded.optimizer.tensors.count("momentum/conv1.weight") == 1);
  CHECK(loaded.shapes.at("conv2.weight") == std::vector<int64_t>{64, 32, 5, 5});

  auto resumed = mnist_convnet();
  initialize(*resumed, 2);  // different weights, all overwritten by restore
  SGD resumed_sgd(resumed->parameters(), {.lr = 0.05, .momentum = 0.9, .weight_decay = 1e-4});
  restore(loaded, *resumed, &resumed_sgd);
  check_same_net(*net, *resumed);

  std::mt19937_64 resumed_rng;
  std::istringstream(loaded.rng.at("data")) >> resumed_rng;
  CHECK(resumed_rng() == data_rng());

  // The momentum came back too: the next step is the same.
  train_step(*net, sgd, 10, 28, 101);
  train_step(*resumed, resumed_sgd, 10, 28, 101);
  check_same_net(*net, *resumed);
}

TEST_CASE("buffers (BN running stats, the 0-d batch counter) and Adam state round trip", "[checkpoint]") {
  TempDir dir;
  auto net = bn_net();
  initialize(*net, 3);
  Adam adam(net->parameters(), {.lr = 0.01});
  train_step(*net, adam, 3, 6, 7);
  train_step(*net, adam, 3, 6, 8);
  REQUIRE(net->find_buffer("bn.num_batches_tracked")->operator[](0) == 2.0f);

  save_checkpoint(make_checkpoint(*net, &adam, 1), dir / "bn.ckpt");
  const Checkpoint loaded = load_checkpoint(dir / "bn.ckpt");
  CHECK(loaded.shapes.at("bn.num_batches_tracked").empty());
  CHECK(loaded.optimizer_name == "adam");
  CHECK(loaded.optimizer.scalars.at("step") == 2);

  auto resumed = bn_net();
  initialize(*resumed, 4);
  Adam resumed_adam(resumed->parameters(), {.lr = 0.01});
  restore(loaded, *resumed, &resumed_adam);
  check_same_net(*net, *resumed);
  train_step(*net, adam, 3, 6, 9);
  train_step(*resumed, resumed_adam, 3, 6, 9);
  check_same_net(*net, *resumed);
}

TEST_CASE("a checkpoint without an optimizer restores the module alone", "[checkpoint]") {
  TempDir dir;
  auto net = bn_net();
  initialize(*net, 5);
  save_checkpoint(make_checkpoint(*net, nullptr, 0), dir / "weights.ckpt");
  const Checkpoint loaded = load_checkpoint(dir / "weights.ckpt");
  CHECK(loaded.optimizer_name.empty());
  auto other = bn_net();
  restore(loaded, *other, nullptr);
  check_same_net(*net, *other);
  SGD sgd(other->parameters(), {});
  CHECK_THAT(error_of(StatusCode::InvalidArgument, [&] { restore(loaded, *other, &sgd); }),
             Catch::Contains("no optimizer state"));
}

TEST_CASE("restore names the first tensor that does not fit and changes nothing", "[checkpoint]") {
  auto net = bn_net();
  initialize(*net, 6);
  SGD sgd(net->parameters(), {.lr = 0.1, .momentum = 0.9});
  const Checkpoint good = make_checkpoint(*net, &sgd, 0);

  auto target = bn_net();
  initialize(*target, 7);
  const Checkpoint before = make_checkpoint(*target, nullptr, 0);

  Checkpoint missing = good;
  missing.tensors.erase("bn.running_var");
  missing.shapes.erase("bn.running_var");
  CHECK_THAT(error_of(StatusCode::InvalidArgument, [&] { restore(missing, *target, nullptr); }),
             Catch::Contains("bn.running_var"));

  auto wider = std::make_unique<Net>();
  wider->add("conv", std::make_unique<Conv2d>(Conv2dOptions{.in_channels = 1, .out_channels = 4, .kernel = 3, .padding = 1, .bias = false}));
  wider->add("bn", std::make_unique<BatchNorm2d>(BatchNormOptions{.channels = 4}));
  wider->add("relu", std::make_unique<ReLU>());
  wider->add("pool", std::make_unique<GlobalAvgPool>());
  wider->add("fc", std::make_unique<Linear>(4, 5));
  const std::string shape_error = error_of(StatusCode::InvalidArgument, [&] { restore(good, *wider, nullptr); });
  CHECK_THAT(shape_error, Catch::Contains("fc.weight") && Catch::Contains("[3, 4]") && Catch::Contains("[5, 4]"));

  Checkpoint extra = good;
  extra.tensors["head.weight"] = {1};
  extra.shapes["head.weight"] = {1};
  CHECK_THAT(error_of(StatusCode::InvalidArgument, [&] { restore(extra, *target, nullptr); }),
             Catch::Contains("head.weight"));

  Adam adam(target->parameters(), {});
  CHECK_THAT(error_of(StatusCode::InvalidArgument, [&] { restore(good, *target, &adam); }),
             Catch::Contains("sgd") && Catch::Contains("adam"));

  check_same_checkpoint(before, make_checkpoint(*target, nullptr, 0));
}

// ---- Atomic saving ------------------------------------------------------------------------

TEST_CASE("saving replaces an existing checkpoint and leaves no temporary file", "[checkpoint][save]") {
  TempDir dir;
  Checkpoint first = small_checkpoint();
  save_checkpoint(first, dir / "run.ckpt");
  Checkpoint second = small_checkpoint();
  second.epoch = 13;
  save_checkpoint(second, dir / "run.ckpt");
  CHECK(load_checkpoint(dir / "run.ckpt").epoch == 13);
  CHECK(dir.temporaries().empty());
}

TEST_CASE("saving into a missing or unwritable directory fails with the path and the reason", "[checkpoint][save]") {
  TempDir dir;
  const std::string missing = dir / "no/such/dir/run.ckpt";
  std::string message = error_of(StatusCode::IoError, [&] { save_checkpoint(small_checkpoint(), missing); });
  CHECK_THAT(message, Catch::Contains(missing) && Catch::Contains("No such file or directory"));

  write_bytes(dir / "plain-file", "x");
  const std::string under_file = dir / "plain-file/run.ckpt";
  message = error_of(StatusCode::IoError, [&] { save_checkpoint(small_checkpoint(), under_file); });
  CHECK_THAT(message, Catch::Contains(under_file) && Catch::Contains("Not a directory"));

  if (::geteuid() != 0) {  // root writes into read-only folders anyway
    const std::string locked = dir / "locked";
    fs::create_directory(locked);
    ::chmod(locked.c_str(), 0500);
    message = error_of(StatusCode::IoError, [&] { save_checkpoint(small_checkpoint(), locked + "/run.ckpt"); });
    CHECK_THAT(message, Catch::Contains(locked + "/run.ckpt") && Catch::Contains("Permission denied"));
    ::chmod(locked.c_str(), 0700);
  }
  // /proc takes no new files, not even from root.
  message = error_of(StatusCode::IoError, [&] { save_checkpoint(small_checkpoint(), "/proc/kolo-test.ckpt"); });
  CHECK_THAT(message, Catch::Contains("/proc/kolo-test.ckpt"));
  CHECK(dir.temporaries().empty());
}

TEST_CASE("a failed rename removes the temporary file", "[checkpoint][save]") {
  TempDir dir;
  fs::create_directories(dir / "run.ckpt/occupied");  // a folder where the file should go
  const std::string message = error_of(StatusCode::IoError,
                                       [&] { save_checkpoint(small_checkpoint(), dir / "run.ckpt"); });
  CHECK_THAT(message, Catch::Contains(dir / "run.ckpt") && Catch::Contains("rename"));
  CHECK(dir.temporaries().empty());
}

TEST_CASE("a write that fails half-way removes the temporary file and keeps the old checkpoint", "[checkpoint][save]") {
  TempDir dir;
  save_checkpoint(small_checkpoint(), dir / "run.ckpt");
  auto net = mnist_convnet();
  initialize(*net, 9);
  const Checkpoint big = make_checkpoint(*net, nullptr, 5);  // about 250 KB

  // A file-size limit makes write() fail with EFBIG part of the way through (the signal
  // that would normally come with it is ignored for the duration).
  struct rlimit old_limit;
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
  auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old_limit;
  small.rlim_cur = 64 * 1024;
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  const std::string message = error_of(StatusCode::IoError, [&] { save_checkpoint(big, dir / "run.ckpt"); });
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  ::signal(SIGXFSZ, old_handler);

  CHECK_THAT(message, Catch::Contains(dir / "run.ckpt") && Catch::Contains("File too large"));
  CHECK(dir.temporaries().empty());
  CHECK(load_checkpoint(dir / "run.ckpt").epoch == small_checkpoint().epoch);
}

TEST_CASE("saving removes the temporary files of killed writers, not a live writer's or others'", "[checkpoint][save]") {
  TempDir dir;
  const std::string path = dir / "run.ckpt";
  write_bytes(path + ".tmp.999991", "a killed writer's half");
  write_bytes(path + ".tmp.999992", "a live writer's half");
  write_bytes(path + ".tmp.notes", "not a save's");
  write_bytes(dir / "other.ckpt.tmp.999993", "another checkpoint's");
  // A live writer holds an exclusive lock on its file (a second open file here counts as another holder).
  const int live = ::open((path + ".tmp.999992").c_str(), O_RDWR | O_CLOEXEC);
  REQUIRE(live >= 0);
  REQUIRE(::flock(live, LOCK_EX | LOCK_NB) == 0);

  save_checkpoint(small_checkpoint(), path);
  ::close(live);
  CHECK_FALSE(fs::exists(path + ".tmp.999991"));
  CHECK(read_bytes(path + ".tmp.999992") == "a live writer's half");
  CHECK(fs::exists(path + ".tmp.notes"));
  CHECK(fs::exists(dir / "other.ckpt.tmp.999993"));
  CHECK(load_checkpoint(path).epoch == small_checkpoint().epoch);
}

// A save once wrote through "<path>.tmp.<pid>", whatever was there.
TEST_CASE("a save never writes through another writer's file or a planted link", "[checkpoint][save]") {
  TempDir dir;
  const std::string path = dir / "run.ckpt";
  const std::string old_name = path + ".tmp." + std::to_string(::getpid());
  SECTION("a live writer of the same pid (another container on a shared file system)") {
    write_bytes(old_name, "the other writer's half");
    const int other = ::open(old_name.c_str(), O_RDWR | O_CLOEXEC);
    REQUIRE(other >= 0);
    REQUIRE(::flock(other, LOCK_EX | LOCK_NB) == 0);
    save_checkpoint(small_checkpoint(), path);
    ::close(other);
    CHECK(read_bytes(old_name) == "the other writer's half");
  }
  SECTION("a symbolic link planted under the temporary name") {
    const std::string victim = dir / "victim";
    write_bytes(victim, "someone else's file");
    fs::create_symlink(victim, old_name);
    save_checkpoint(small_checkpoint(), path);
    CHECK(read_bytes(victim) == "someone else's file");
  }
  CHECK(load_checkpoint(path).epoch == small_checkpoint().epoch);
}

TEST_CASE("an inconsistent checkpoint is refused before any file is created", "[checkpoint][save]") {
  TempDir dir;
  Checkpoint bad = small_checkpoint();
  bad.shapes["conv.weight"] = {3, 3};
  CHECK_THAT(error_of(StatusCode::InvalidArgument, [&] { save_checkpoint(bad, dir / "bad.ckpt"); }),
             Catch::Contains("conv.weight"));
  // A shape whose product overflows once passed as empty beside an empty tensor.
  Checkpoint overflowing = small_checkpoint();
  overflowing.tensors["empty"] = {};
  overflowing.shapes["empty"] = {int64_t{1} << 62, 4, 0};
  CHECK_THAT(error_of(StatusCode::InvalidArgument, [&] { save_checkpoint(overflowing, dir / "bad.ckpt"); }),
             Catch::Contains("too many elements"));
  Checkpoint negative_epoch = small_checkpoint();
  negative_epoch.epoch = -1;
  CHECK_THAT(error_of(StatusCode::InvalidArgument, [&] { save_checkpoint(negative_epoch, dir / "bad.ckpt"); }),
             Catch::Contains("epoch -1 is not a count of epochs"));
  CHECK(fs::is_empty(dir.path));
}
