// The test reference for Adasum (ops/adasum.h, ReduceOp::Adasum): the pairwise tree
// ((v0 ⊕ v1) ⊕ (v2 ⊕ v3)) ⊕ ... evaluated directly, tensor by tensor, in long double, with
// a ⊕ b = (1 − a·b / (2‖a‖²))·a + (1 − a·b / (2‖b‖²))·b (a coefficient is 1 where its
// norm is 0). Each level's result is rounded to the dtype, as kolo's buffer holds it
// between levels. Written from the formula, independently of kolo's halving scheme.
//
// And the vectors the tests reduce: every rank's, built on every rank from a seed, with
// a shared component (so that the dot products matter) and scales that differ by many
// orders of magnitude between ranks, down to a few times the dtype's smallest normal.
#pragma once

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kolo/kolo.h"
#include "support/values.h"

namespace kolo_test {

// One rank's tensors, as the long double values of the dtype's elements.
using AdasumTensors = std::vector<std::vector<long double>>;

// x rounded to nearest in `d` (float16 through float, as kolo stores it).
inline long double round_to(kolo::DType d, long double x) {
  switch (d) {
    case kolo::DType::Float16: return half_bits_to_double(half_bits_nearest(static_cast<float>(x)));
    case kolo::DType::Float32: return static_cast<float>(x);
    default: return static_cast<double>(x);
  }
}

inline AdasumTensors adasum_pair(const AdasumTensors& a, const AdasumTensors& b, kolo::DType d) {
  AdasumTensors out(a.size());
  for (std::size_t t = 0; t < a.size(); ++t) {
    long double dot = 0, aa = 0, bb = 0;
    for (std::size_t i = 0; i < a[t].size(); ++i) {
      dot += a[t][i] * b[t][i];
      aa += a[t][i] * a[t][i];
      bb += b[t][i] * b[t][i];
    }
    const long double ca = aa == 0 ? 1 : 1 - dot / (2 * aa);
    const long double cb = bb == 0 ? 1 : 1 - dot / (2 * bb);
    for (std::size_t i = 0; i < a[t].size(); ++i) out[t].push_back(round_to(d, ca * a[t][i] + cb * b[t][i]));
  }
  return out;
}

// The tree over ranks [lo, hi), a power-of-two count of them.
inline AdasumTensors adasum_tree(const std::vector<AdasumTensors>& ranks, kolo::DType d, std::size_t lo, std::size_t hi) {
  if (hi - lo == 1) return ranks[lo];
  const std::size_t mid = lo + (hi - lo) / 2;
  return adasum_pair(adasum_tree(ranks, d, lo, mid), adasum_tree(ranks, d, mid, hi), d);
}
inline AdasumTensors adasum_tree(const std::vector<AdasumTensors>& ranks, kolo::DType d) {
  return adasum_tree(ranks, d, 0, ranks.size());
}

// Scales that differ by many orders of magnitude, and a few times the smallest normal.
inline std::vector<long double> adasum_wide_scales(kolo::DType d) {
  switch (d) {
    case kolo::DType::Float16: return {1e3L, 1e-3L, 1, 4 * 6.103515625e-5L};
    case kolo::DType::Float32: return {1e30L, 1e-30L, 1, 4 * static_cast<long double>(FLT_MIN)};
    default: return {1e150L, 1e-150L, 1, 4 * static_cast<long double>(DBL_MIN)};
  }
}

// Every rank's tensors of `counts` elements: rank r's tensor t is
// scale · (shared_t + noise_{r,t} / 2), uniform parts in [-1, 1), with the scale
// scales[(r + t) % scales.size()], rounded to the dtype. Rank 1's tensor 2 is zeros (a
// rank with nothing to add). The same on every rank.
inline std::vector<AdasumTensors> adasum_vectors(kolo::DType d, int size, const std::vector<int64_t>& counts,
                                                 const std::vector<long double>& scales, uint64_t seed = 1) {
  std::vector<AdasumTensors> out(static_cast<std::size_t>(size), AdasumTensors(counts.size()));
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (std::size_t t = 0; t < counts.size(); ++t) {
    std::mt19937_64 shared_rng(seed * 1000003 + t);
    std::vector<double> shared(static_cast<std::size_t>(counts[t]));
    for (double& x : shared) x = uniform(shared_rng);
    for (int r = 0; r < size; ++r) {
      std::mt19937_64 rng(seed * 7919 + static_cast<uint64_t>(r) * 104729 + t);
      const long double scale = (r == 1 && t == 2) ? 0 : scales[(r + t) % scales.size()];
      for (double s : shared)
        out[static_cast<std::size_t>(r)][t].push_back(round_to(d, scale * (s + uniform(rng) / 2)));
    }
  }
  return out;
}

// The largest difference, relative to the largest magnitude of `want` (0 when equal).
inline long double relative_error(const std::vector<long double>& got, const std::vector<long double>& want) {
  long double diff = 0, norm = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    diff = std::max(diff, std::fabs(got[i] - want[i]));
    norm = std::max(norm, std::fabs(want[i]));
  }
  return diff == 0 ? 0 : diff / norm;
}

// Tolerances for Adasum's results against the reference, relative to the result's size:
// a few roundings of the dtype.
inline long double adasum_tolerance(kolo::DType d) {
  switch (d) {
    case kolo::DType::Float16: return 4e-3L;
    case kolo::DType::Float32: return 1e-5L;
    default: return 1e-12L;
  }
}

}  // namespace kolo_test
