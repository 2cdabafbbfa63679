// The examples' shared pieces (examples/common) on their own, without MPI: what the console
// lines look like, how the metrics CSV and the checkpoint folder behave across a resume, and
// the exact counting behind the evaluation.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/checkpoint_dir.h"
#include "common/dataset_tools.h"
#include "common/evaluator.h"
#include "common/format.h"
#include "common/metrics_csv.h"
#include "support/status.h"
#include "support/temp_dir.h"

using namespace kolo::examples;
namespace models = kolo::models;
namespace fs = std::filesystem;

namespace {

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("numbers get thousands separators", "[format]") {
  CHECK(with_thousands(0) == "0");
  CHECK(with_thousands(999) == "999");
  CHECK(with_thousands(1000) == "1,000");
  CHECK(with_thousands(10700) == "10,700");
  CHECK(with_thousands(1234567) == "1,234,567");
  CHECK(with_thousands(-60000) == "-60,000");
}

TEST_CASE("durations read as seconds, then minutes, then hours", "[format]") {
  CHECK(duration_string(0.04) == "0.0s");
  CHECK(duration_string(11.24) == "11.2s");
  CHECK(duration_string(59.9) == "59.9s");
  CHECK(duration_string(125) == "2m05s");
  CHECK(duration_string(3725) == "1h02m05s");
}

TEST_CASE("counts take the plural unless they are one", "[format]") {
  CHECK(count_of(1, "epoch") == "1 epoch");
  CHECK(count_of(8, "epoch") == "8 epochs");
  CHECK(count_of(0.5, "epoch") == "0.5 epochs");
}

TEST_CASE("the epoch line reads like Keras'", "[format]") {
  EpochReport r{.epoch = 3, .epochs = 8, .steps = 600, .seconds = 11.2, .loss = 0.31, .acc = 0.89,
                .val_acc = 0.88, .images_per_s = 10700.4};
  CHECK(epoch_line(r) == "epoch 3/8 - 600 steps - 11.2s - loss 0.3100 - acc 0.8900 - val_acc 0.8800 - 10,700 img/s");
  r.val_acc = -1;
  CHECK(epoch_line(r) == "epoch 3/8 - 600 steps - 11.2s - loss 0.3100 - acc 0.8900 - 10,700 img/s");
}

TEST_CASE("the metrics CSV has a header and one row per epoch, a resumed run keeps the rows before it",
          "[metrics]") {
  const kolo_test::TempDir scratch("kolo-examples-csv");
  const fs::path file = scratch.path / "m.csv";
  {
    MetricsCsv csv(file.string(), 0);
    for (int64_t e = 1; e <= 3; ++e) csv.append({.epoch = e, .epochs = 3, .steps = 10, .loss = 1.0 / e});
  }
  CHECK(read(file).rfind("epoch,steps,seconds,lr,loss,acc,val_acc,images_per_s\n1,10,", 0) == 0);
  // Resumed after epoch 1: epochs 2 and 3 are redone, so their old rows go.
  MetricsCsv resumed(file.string(), 1);
  resumed.append({.epoch = 2, .epochs = 3, .steps = 10, .loss = 0.25});
  std::istringstream lines(read(file));
  std::vector<std::string> rows;
  for (std::string line; std::getline(lines, line);) rows.push_back(line);
  REQUIRE(rows.size() == 3);
  CHECK(rows[1].rfind("1,10,", 0) == 0);
  CHECK(rows[2].rfind("2,10,", 0) == 0);
  CHECK(rows[2].find(",0.250000,") != std::string::npos);
  // A fresh run starts over.
  MetricsCsv fresh(file.string(), 0);
  CHECK(read(file) == "epoch,steps,seconds,lr,loss,acc,val_acc,images_per_s\n");
}

TEST_CASE("an unwritable metrics CSV is an error naming the file", "[metrics]") {
  CHECK_THROWS_MATCHES(MetricsCsv("/nonexistent-kolo-dir/m.csv", 0), kolo::Error,
                       kolo_test::HasCode(kolo::StatusCode::IoError, "/nonexistent-kolo-dir/m.csv"));
}

TEST_CASE("the checkpoint folder finds the newest epoch and keeps the newest files", "[checkpoint]") {
  const kolo_test::TempDir scratch("kolo-examples-ckpt");
  const fs::path dir = scratch.path / "nested";
  CheckpointDir checkpoints(dir.string(), 2);
  CHECK(checkpoints.latest_epoch() == 0);  // the folder does not even exist yet
  CHECK(checkpoints.path_for(3) == (dir / "checkpoint-epoch-0003.kolo").string());
  std::unique_ptr<models::Net> net = models::mnist_convnet();
  models::initialize(*net, 1);
  for (int64_t epoch = 1; epoch <= 3; ++epoch) checkpoints.save(models::make_checkpoint(*net, nullptr, epoch));
  std::ofstream(dir / "checkpoint-epoch-0009.kolo.tmp.123") << "a half-written file";  // ignored
  CHECK(checkpoints.latest_epoch() == 3);
  CHECK_FALSE(fs::exists(checkpoints.path_for(1)));
  CHECK(fs::exists(checkpoints.path_for(2)));
  CHECK(models::load_checkpoint(checkpoints.path_for(3)).epoch == 3);
  CHECK(CheckpointDir("").latest_epoch() == 0);
}

TEST_CASE("the checkpoint folder never removes the epoch it just saved, and reads names as it finds them",
          "[checkpoint]") {
  const kolo_test::TempDir scratch("kolo-examples-ckpt");
  const fs::path& dir = scratch.path;
  CheckpointDir checkpoints(dir.string(), 2);
  std::unique_ptr<models::Net> net = models::mnist_convnet();
  models::initialize(*net, 1);
  for (int64_t epoch = 2; epoch <= 3; ++epoch) checkpoints.save(models::make_checkpoint(*net, nullptr, epoch));
  // Epoch 1 of another run in the same folder: the oldest, but the one just written.
  checkpoints.save(models::make_checkpoint(*net, nullptr, 1));
  CHECK(fs::exists(checkpoints.path_for(1)));
  CHECK(fs::exists(checkpoints.path_for(2)));
  CHECK(fs::exists(checkpoints.path_for(3)));
  // Another zero padding is the same epoch, opened by its own name; a number too large for
  // an epoch is not a checkpoint.
  fs::rename(checkpoints.path_for(3), dir / "checkpoint-epoch-07.kolo");
  std::ofstream(dir / "checkpoint-epoch-99999999999999999999.kolo") << "not a checkpoint";
  CHECK(checkpoints.latest_epoch() == 7);
  CHECK(checkpoints.latest_path() == (dir / "checkpoint-epoch-07.kolo").string());
  CHECK(models::load_checkpoint(checkpoints.latest_path()).epoch == 3);
}

TEST_CASE("count_correct counts first maxima at the label within the given rows", "[evaluate]") {
  const models::Tensor logits = models::Tensor::from({4, 3}, {0, 2, 1,  //
                                                               5, 5, 1,  // tie: the first maximum (0) counts
                                                               0, 0, 9,  //
                                                               1, 0, 0});
  CHECK(count_correct(logits, {1, 0, 2, 2}, 4) == 3);
  CHECK(count_correct(logits, {1, 1, 2, 0}, 4) == 3);
  CHECK(count_correct(logits, {1, 0, 2, 0}, 2) == 2);  // the rest is the sampler's padding
}

TEST_CASE("keep_first trims a data set, and pixel statistics match a direct computation", "[data]") {
  models::Dataset data = models::synthetic_dataset(10, 1, 4, 4, 10, 7);
  keep_first(data, 0);
  CHECK(data.count == 10);
  keep_first(data, 4);
  CHECK(data.count == 4);
  CHECK(data.images.size() == 4 * 16);
  CHECK(data.labels.size() == 4);
  models::Dataset two;
  two.images = {0, 1, 1, 0};
  two.count = 1;
  const MeanStd stats = pixel_mean_std(two);
  CHECK(stats.mean == Approx(0.5f));
  CHECK(stats.stddev == Approx(0.5f));
}
