// CIFAR-10 binary batches: records of 1 label byte then 3072 pixel bytes (the red plane,
// then green, then blue; 32×32 each, row-major), so each record is already CHW. Several
// files (data_batch_1..5.bin) concatenate into one dataset.
#include "file_reader.h"
#include "kolo/models.h"

namespace kolo::models {
namespace {

constexpr int64_t kSide = 32, kChannels = 3, kClasses = 10;
constexpr int64_t kPixels = kChannels * kSide * kSide;  // 3072
constexpr int64_t kRecord = 1 + kPixels;                // 3073

}  // namespace

Dataset load_cifar10(const std::vector<std::string>& paths) {
  if (paths.empty()) throw Error(StatusCode::InvalidArgument, "kolo: load_cifar10: no files given");
  Dataset dataset;
  dataset.channels = kChannels;
  dataset.height = kSide;
  dataset.width = kSide;
  dataset.classes = kClasses;
  for (const std::string& path : paths) {
    const std::vector<uint8_t> bytes = data::FileReader(path).read_all();
    const int64_t size = static_cast<int64_t>(bytes.size());
    if (size == 0) data::corrupt(path, "empty file");
    if (size % kRecord != 0) {
      data::corrupt(path, "size " + std::to_string(size) + " bytes is not a multiple of " + std::to_string(kRecord) +
                           " (1 label byte + 3072 pixel bytes per record): truncated or not a CIFAR-10 binary file");
    }
    const int64_t records = size / kRecord;
    dataset.images.resize(static_cast<std::size_t>((dataset.count + records) * kPixels));
    dataset.labels.resize(static_cast<std::size_t>(dataset.count + records));
    for (int64_t r = 0; r < records; ++r) {
      const uint8_t* record = bytes.data() + r * kRecord;
      if (record[0] >= kClasses) {
        data::corrupt(path, "label " + std::to_string(record[0]) + " at index " + std::to_string(r) + " is outside [0, " +
                             std::to_string(kClasses) + ")");
      }
      dataset.labels[dataset.count + r] = record[0];
      float* image = dataset.images.data() + (dataset.count + r) * kPixels;
      for (int64_t i = 0; i < kPixels; ++i) image[i] = static_cast<float>(record[1 + i]) / 255.0f;
    }
    dataset.count += records;
  }
  return dataset;
}

}  // namespace kolo::models
