#include "common/dataset_tools.h"

#include <cmath>

namespace kolo::examples {

void keep_first(models::Dataset& data, int64_t count) {
  if (count <= 0 || count >= data.count) return;
  data.count = count;
  data.images.resize(static_cast<std::size_t>(count * data.image_size()));
  data.labels.resize(static_cast<std::size_t>(count));
}

MeanStd pixel_mean_std(const models::Dataset& data) {
  if (data.images.empty()) return {};
  // Two passes in double: the one-pass E[x²] - E[x]² loses digits.
  double sum = 0;
  for (float v : data.images) sum += v;
  const double mean = sum / static_cast<double>(data.images.size());
  double squares = 0;
  for (float v : data.images) squares += (v - mean) * (v - mean);
  const double stddev = std::sqrt(squares / static_cast<double>(data.images.size()));
  return {static_cast<float>(mean), static_cast<float>(stddev > 0 ? stddev : 1)};
}

}  // namespace kolo::examples
