// Random host tensors for the model tests that compare devices and kernels.
#pragma once

#include <random>
#include <vector>

#include "kolo/models.h"

namespace kolo::models::test {

// Normal values with standard deviation `scale`, the same for a seed everywhere.
inline Tensor random_tensor(std::vector<int64_t> shape, uint64_t seed, double scale = 1.0) {
  Tensor t(std::move(shape));
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n(0.0, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t[i] = static_cast<float>(n(rng));
  return t;
}

// Small integers: many ties, for the first-maximum rules.
inline Tensor integer_tensor(std::vector<int64_t> shape, uint64_t seed, int values = 4) {
  Tensor t(std::move(shape));
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> u(0, values - 1);
  for (int64_t i = 0; i < t.numel(); ++i) t[i] = static_cast<float>(u(rng));
  return t;
}

}  // namespace kolo::models::test
