// The training data: a synthetic binary classification set that every process generates
// the same way from a seed, so no files are needed. Features are standard normal; the
// label says on which side of a fixed random hyperplane a point lies, with a little noise,
// so the classes are nearly (not quite) linearly separable.
#pragma once

#include <cstdint>
#include <vector>

struct Dataset {
  int features = 0;
  std::vector<float> x;  // samples × features, row-major
  std::vector<float> y;  // one label per sample: 0 or 1

  int samples() const { return static_cast<int>(y.size()); }
  const float* row(int i) const { return x.data() + static_cast<std::size_t>(i) * features; }
};

Dataset make_dataset(int samples, int features, uint32_t seed);

// Rows [part * n / parts, (part + 1) * n / parts): part `part` of `parts` equal parts.
// Throws std::invalid_argument when n does not divide by parts (unequal parts would weigh
// some samples more than others once the parts' gradients are averaged).
Dataset shard(const Dataset& all, int part, int parts);
