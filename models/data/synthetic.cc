// Synthetic data: random images and labels of any shape for benchmarks and tests. Drawn
// with our own arithmetic on std::mt19937_64 (whose output the standard fixes) rather than
// std::uniform_*_distribution (whose algorithm it does not), so a seed gives the same data
// on every platform.
#include "kolo/models.h"

namespace kolo::models {

Dataset synthetic_dataset(int64_t count, int64_t channels, int64_t height, int64_t width, int64_t classes,
                          uint64_t seed) {
  if (count < 0 || channels < 1 || height < 1 || width < 1 || classes < 1) {
    throw Error(StatusCode::InvalidArgument,
                "kolo: synthetic_dataset: needs count >= 0 and positive channels, height, width, classes; got " +
                    shape_string({count, channels, height, width}) + " with " + std::to_string(classes) +
                    " classes");
  }
  Dataset dataset;
  dataset.count = count;
  dataset.channels = channels;
  dataset.height = height;
  dataset.width = width;
  dataset.classes = classes;
  std::mt19937_64 rng(seed);
  dataset.images.resize(static_cast<std::size_t>(count * dataset.image_size()));
  // The top 24 bits as a float in [0, 1): exact, and the same everywhere.
  for (float& pixel : dataset.images) pixel = static_cast<float>(rng() >> 40) * 0x1p-24f;
  dataset.labels.resize(static_cast<std::size_t>(count));
  // The modulo bias is below 2^-50 for any sane number of classes.
  for (int32_t& label : dataset.labels) label = static_cast<int32_t>(rng() % static_cast<uint64_t>(classes));
  return dataset;
}

}  // namespace kolo::models
