// DistributedSampler: torch.utils.data.DistributedSampler(shuffle, seed, drop_last=False)
// semantics — a permutation of [0, n) drawn from seed + epoch, padded by wrapping around to
// a multiple of the world size, rank r taking positions r, r + size, ... The permutation is
// our own Fisher-Yates on std::mt19937_64 (std::shuffle's algorithm is up to the library),
// so every rank computes the same order on any platform.
#include <numeric>

#include "kolo/models.h"

namespace kolo::models {
namespace {

// Uniform in [0, bound) without modulo bias: reject the few draws below 2^64 mod bound.
uint64_t uniform_below(std::mt19937_64& rng, uint64_t bound) {
  const uint64_t threshold = (0 - bound) % bound;
  for (;;) {
    const uint64_t r = rng();
    if (r >= threshold) return r % bound;
  }
}

}  // namespace

DistributedSampler::DistributedSampler(int64_t dataset_size, int rank, int size, bool shuffle, uint64_t seed)
    : dataset_size_(dataset_size), rank_(rank), size_(size), shuffle_(shuffle), seed_(seed) {
  if (dataset_size < 0 || size < 1 || rank < 0 || rank >= size) {
    throw Error(StatusCode::InvalidArgument, "kolo: DistributedSampler: rank " + std::to_string(rank) + " of " +
                                                 std::to_string(size) + " over " + std::to_string(dataset_size) +
                                                 " samples (needs 0 <= rank < size and dataset_size >= 0)");
  }
}

int64_t DistributedSampler::samples_per_rank() const { return (dataset_size_ + size_ - 1) / size_; }

std::vector<int64_t> DistributedSampler::indices(int64_t epoch) const {
  std::vector<int64_t> order(static_cast<std::size_t>(dataset_size_));
  std::iota(order.begin(), order.end(), int64_t{0});
  if (shuffle_) {
    std::mt19937_64 rng(seed_ + static_cast<uint64_t>(epoch));
    for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[uniform_below(rng, i)]);
  }
  // Position p of the padded order is order[p % n]; this rank takes p = rank, rank + size, ...
  std::vector<int64_t> mine(static_cast<std::size_t>(samples_per_rank()));
  for (std::size_t k = 0; k < mine.size(); ++k) {
    const int64_t p = rank_ + static_cast<int64_t>(k) * size_;
    mine[k] = order[static_cast<std::size_t>(p % dataset_size_)];
  }
  return mine;
}

}  // namespace kolo::models
