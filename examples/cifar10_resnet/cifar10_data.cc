#include "cifar10_resnet/cifar10_data.h"

#include <algorithm>
#include <filesystem>

#include "common/dataset_tools.h"
#include "common/format.h"

namespace kolo::examples {
namespace {

namespace fs = std::filesystem;

const char* const kWhereFrom =
    "a folder of CIFAR-10 binary files: data_batch_1.bin ... data_batch_5.bin and test_batch.bin, "
    "from https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz; without --data-dir the example runs on "
    "synthetic data";

// IoError for a folder or file that is not there, as models' own loaders say it.
[[noreturn]] void fail(const std::string& problem, kolo::StatusCode code = kolo::StatusCode::IoError) {
  throw kolo::Error(code, problem + "\n  (--data-dir takes " + kWhereFrom + ")");
}

// The archive unpacks into cifar-10-batches-bin/: accept its parent too.
fs::path batches_folder(const std::string& folder) {
  std::error_code error;
  if (!fs::is_directory(folder, error)) fail("--data-dir " + folder + ": no such folder");
  const fs::path nested = fs::path(folder) / "cifar-10-batches-bin";
  if (!fs::exists(fs::path(folder) / "data_batch_1.bin", error) && fs::is_directory(nested, error)) return nested;
  return folder;
}

CifarData from_folder(const std::string& folder, int64_t train_limit, int64_t test_limit) {
  const fs::path dir = batches_folder(folder);
  std::vector<std::string> train_files;
  for (int i = 1; i <= 5; ++i) {
    const fs::path file = dir / ("data_batch_" + std::to_string(i) + ".bin");
    if (fs::exists(file)) train_files.push_back(file.string());
  }
  if (train_files.empty()) fail(dir.string() + ": no training file (data_batch_1.bin ... data_batch_5.bin) there");
  const fs::path test_file = dir / "test_batch.bin";
  if (!fs::exists(test_file)) fail(dir.string() + ": no test_batch.bin there");

  CifarData data;
  try {
    data.train = models::load_cifar10(train_files);
    data.test = models::load_cifar10({test_file.string()});
  } catch (const kolo::Error& e) {
    fail(e.what(), e.code());  // IoError for a file that cannot be read, InvalidArgument for bad contents
  }
  keep_first(data.train, train_limit);
  keep_first(data.test, test_limit);
  data.origin = dir.string() + " (" + std::to_string(train_files.size()) + " training file" +
                (train_files.size() == 1 ? "" : "s") + " and test_batch.bin)";
  return data;
}

CifarData synthetic(int64_t train_limit, int64_t test_limit, uint64_t seed) {
  const int64_t train_count = train_limit > 0 ? train_limit : kCifarTrainImages;
  const int64_t test_count =
      test_limit > 0 ? test_limit : std::max<int64_t>(1, train_count * kCifarTestImages / kCifarTrainImages);
  CifarData data;
  data.synthetic = true;
  // Different seeds for the two splits, the same on every rank (each takes its own share).
  data.train = models::synthetic_dataset(train_count, 3, 32, 32, 10, seed * 2 + 1);
  data.test = models::synthetic_dataset(test_count, 3, 32, 32, 10, seed * 2 + 2);
  data.origin = "SYNTHETIC data (no --data-dir): random 3x32x32 images with random labels, so the times are "
                "real and the accuracies are chance (0.1)";
  return data;
}

}  // namespace

CifarData load_cifar10_or_synthetic(const std::string& folder, int64_t train_limit, int64_t test_limit,
                                    uint64_t seed) {
  return folder.empty() ? synthetic(train_limit, test_limit, seed) : from_folder(folder, train_limit, test_limit);
}

const std::vector<float>& cifar10_mean() {
  static const std::vector<float> mean{0.4914f, 0.4822f, 0.4465f};
  return mean;
}

const std::vector<float>& cifar10_stddev() {
  static const std::vector<float> stddev{0.2470f, 0.2435f, 0.2616f};
  return stddev;
}

}  // namespace kolo::examples
