#include "dataset.h"

#include <random>
#include <stdexcept>
#include <string>

Dataset make_dataset(int samples, int features, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> direction(static_cast<std::size_t>(features));
  for (float& d : direction) d = normal(rng);

  Dataset data;
  data.features = features;
  data.x.resize(static_cast<std::size_t>(samples) * features);
  data.y.resize(static_cast<std::size_t>(samples));
  for (int i = 0; i < samples; ++i) {
    float side = 0.0f;
    for (int j = 0; j < features; ++j) {
      const float v = normal(rng);
      data.x[static_cast<std::size_t>(i) * features + j] = v;
      side += v * direction[j];
    }
    // The noise flips labels close to the hyperplane only: no model reaches zero loss.
    data.y[i] = side + 0.5f * normal(rng) > 0.0f ? 1.0f : 0.0f;
  }
  return data;
}

Dataset shard(const Dataset& all, int part, int parts) {
  const int n = all.samples();
  if (parts <= 0 || part < 0 || part >= parts || n % parts != 0)
    throw std::invalid_argument("cannot split " + std::to_string(n) + " samples into " +
                                std::to_string(parts) + " equal shards (choose --samples " +
                                "divisible by the number of ranks)");
  const int begin = part * (n / parts), end = begin + n / parts;
  Dataset s;
  s.features = all.features;
  s.x.assign(all.row(begin), all.row(end));
  s.y.assign(all.y.begin() + begin, all.y.begin() + end);
  return s;
}
