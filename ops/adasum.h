// Adasum, the adaptive summation of Maleki et al. ("Scaling Distributed Training with
// Adaptive Summation", MLSys 2021; Horovod's AdasumMPI): ranks' vectors are combined in
// pairs, a ⊕ b = (1 − a·b / (2‖a‖²))·a + (1 − a·b / (2‖b‖²))·b, along a binary tree
// ((v0 ⊕ v1) ⊕ (v2 ⊕ v3)) ⊕ ... . Orthogonal vectors add; equal ones are averaged.
//
// Run as in Horovod: recursive vector halving with distance doubling (each level pairs
// rank r with r ^ d and leaves each with half of the pair's segment), then the reverse
// allgather. The dot products and norms are per tensor of a fused buffer, accumulated in
// float64 (long double for float64 data), so that vectors whose scales differ by many
// orders of magnitude, down to the dtype's smallest normal numbers, combine accurately.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "backend.h"

namespace kolo::ops {

// The coefficients of one pair's combine, a' = a·a_coeff + b·b_coeff: 1 − dot / (2 norm²),
// and 1 for a vector whose norm² is 0 (a rank that contributes zeros changes nothing).
struct AdasumCoefficients {
  long double a = 1, b = 1;
};
AdasumCoefficients adasum_coefficients(long double dot, long double a_norm2, long double b_norm2);

// Runs Adasum in place over `data`: tensors back to back, counts[i] elements each, of
// `dtype` (Float16, Float32 or Float64; Unsupported otherwise). This rank is `rank` of
// `size` ranks of `backend`, and `size` must be a power of two (InvalidArgument
// otherwise). Every rank calls it at the same point with the same counts; the result is
// the same on every rank. `scratch` is this rank's working memory, grown as needed (half
// the buffer, and the per-tensor sums), kept by the caller between calls.
void adasum_allreduce(void* data, std::span<const int64_t> counts, DType dtype, int rank, int size,
                      Backend& backend, std::vector<std::byte>& scratch);

}  // namespace kolo::ops
