#include "adasum.h"

#include <algorithm>
#include <string>

#include "dtype.h"
#include "kolo/check.h"

namespace kolo::ops {

AdasumCoefficients adasum_coefficients(long double dot, long double a_norm2, long double b_norm2) {
  AdasumCoefficients c;
  if (a_norm2 != 0) c.a = 1 - dot / (2 * a_norm2);
  if (b_norm2 != 0) c.b = 1 - dot / (2 * b_norm2);
  return c;
}

namespace {

// How each dtype is read, accumulated and written back.
struct Half {
  using Storage = uint16_t;
  using Acc = double;
  static Acc load(Storage x) { return half_to_float(x); }
  // Through float: rounding twice differs from rounding once only at float's exact
  // halfway points between two halves, far below float16's own precision.
  static Storage store(Acc x) { return float_to_half(static_cast<float>(x)); }
};
struct Single {
  using Storage = float;
  using Acc = double;
  static Acc load(Storage x) { return x; }
  static Storage store(Acc x) { return static_cast<float>(x); }
};
struct Double {
  using Storage = double;
  // Squares of doubles near the smallest normal (2.2e-308) underflow in double; long double
  // (x87's 80 bits on x86-64, exponent to ±4932) holds them and their sums.
  using Acc = long double;
  static Acc load(Storage x) { return x; }
  static Storage store(Acc x) { return static_cast<double>(x); }
};

// A range of elements of the fused buffer: [lo, hi).
struct Segment {
  int64_t lo = 0, hi = 0;
  int64_t size() const { return hi - lo; }
};

// Made even when both sides are empty, so that every rank makes the same calls (as the
// in-process backend, which meets all ranks at each, needs).
template <typename T>
void exchange(Backend& backend, const T* send, int64_t send_count, T* recv, int64_t recv_count, int peer) {
  backend.sendrecv(send, static_cast<std::size_t>(send_count) * sizeof(T), recv,
                   static_cast<std::size_t>(recv_count) * sizeof(T), peer);
}

template <typename D>
void adasum_typed(typename D::Storage* data, std::span<const int64_t> counts, int rank, int size, Backend& backend,
                  std::vector<std::byte>& scratch) {
  using T = typename D::Storage;
  using Acc = typename D::Acc;
  const std::size_t tensors = counts.size();
  std::vector<int64_t> begin(tensors + 1, 0);  // tensor t is [begin[t], begin[t + 1])
  for (std::size_t t = 0; t < tensors; ++t) begin[t + 1] = begin[t] + counts[t];
  const int64_t total = begin.back();
  const std::size_t half_bytes = static_cast<std::size_t>(total - total / 2) * sizeof(T);
  if (scratch.size() < half_bytes) scratch.resize(half_bytes);
  T* theirs = reinterpret_cast<T*>(scratch.data());  // the partner's copy of the half kept
  // Per tensor: a·b, ‖a‖², ‖b‖², where a is the vector of the pair's lower ranks.
  std::vector<Acc> sums(3 * tensors), received(3 * tensors);

  // Where tensor t meets segment s: [first, last), empty when last <= first.
  const auto overlap = [&](std::size_t t, const Segment& s) {
    return Segment{std::max(begin[t], s.lo), std::min(begin[t + 1], s.hi)};
  };

  // Vector halving, distance doubling: at level d the pair (r, r ^ d) combines the vector
  // of ranks [r & ~(2d - 1), +d) with that of the next d ranks, each rank over its own
  // part. The lower rank keeps the first half of its segment, the upper the second.
  std::vector<Segment> held;  // the segment held before each level, for the allgather
  Segment mine{0, total};
  for (int d = 1; d < size; d <<= 1) {
    const int peer = rank ^ d;
    const bool lower = (rank & d) == 0;
    const int64_t mid = mine.lo + mine.size() / 2;
    const Segment keep = lower ? Segment{mine.lo, mid} : Segment{mid, mine.hi};
    const Segment give = lower ? Segment{mid, mine.hi} : Segment{mine.lo, mid};
    held.push_back(mine);
    exchange(backend, data + give.lo, give.size(), theirs, keep.size(), peer);

    std::fill(sums.begin(), sums.end(), Acc(0));
    for (std::size_t t = 0; t < tensors; ++t) {
      const Segment part = overlap(t, keep);
      Acc dot = 0, mine_norm2 = 0, their_norm2 = 0;
      for (int64_t i = part.lo; i < part.hi; ++i) {
        const Acc x = D::load(data[i]), y = D::load(theirs[i - keep.lo]);
        dot += x * y;
        mine_norm2 += x * x;
        their_norm2 += y * y;
      }
      sums[3 * t] = dot;
      sums[3 * t + 1] = lower ? mine_norm2 : their_norm2;
      sums[3 * t + 2] = lower ? their_norm2 : mine_norm2;
    }
    // Summed over the 2d ranks that hold the pair's two vectors, by recursive doubling.
    // Addition commutes, so every rank of the group ends with the same bits, and computes
    // the same coefficients.
    for (int k = 1; k <= d; k <<= 1) {
      exchange(backend, sums.data(), int64_t(sums.size()), received.data(), int64_t(received.size()), rank ^ k);
      for (std::size_t j = 0; j < sums.size(); ++j) sums[j] += received[j];
    }

    for (std::size_t t = 0; t < tensors; ++t) {
      const Segment part = overlap(t, keep);
      if (part.size() <= 0) continue;
      const AdasumCoefficients c = adasum_coefficients(sums[3 * t], sums[3 * t + 1], sums[3 * t + 2]);
      const Acc own = static_cast<Acc>(lower ? c.a : c.b), other = static_cast<Acc>(lower ? c.b : c.a);
      for (int64_t i = part.lo; i < part.hi; ++i)
        data[i] = D::store(own * D::load(data[i]) + other * D::load(theirs[i - keep.lo]));
    }
    mine = keep;
  }

  // The reverse: distance halving, each pair swapping its halves, until every rank holds
  // the whole buffer.
  for (int d = size >> 1; d >= 1; d >>= 1) {
    const Segment whole = held.back();
    held.pop_back();
    const int64_t mid = whole.lo + whole.size() / 2;
    const Segment other = (rank & d) == 0 ? Segment{mid, whole.hi} : Segment{whole.lo, mid};
    exchange(backend, data + mine.lo, mine.size(), data + other.lo, other.size(), rank ^ d);
    mine = whole;
  }
}

}  // namespace

void adasum_allreduce(void* data, std::span<const int64_t> counts, DType dtype, int rank, int size,
                      Backend& backend, std::vector<std::byte>& scratch) {
  KOLO_CHECK(size > 0 && (size & (size - 1)) == 0, StatusCode::InvalidArgument,
             "kolo: Adasum needs a power-of-two number of ranks, not " + std::to_string(size));
  KOLO_CHECK(rank >= 0 && rank < size, StatusCode::Internal,
             "kolo: Adasum on rank " + std::to_string(rank) + " of " + std::to_string(size));
  switch (dtype) {
    case DType::Float16:
      return adasum_typed<Half>(static_cast<uint16_t*>(data), counts, rank, size, backend, scratch);
    case DType::Float32:
      return adasum_typed<Single>(static_cast<float*>(data), counts, rank, size, backend, scratch);
    case DType::Float64:
      return adasum_typed<Double>(static_cast<double*>(data), counts, rank, size, backend, scratch);
    default:
      throw Error(StatusCode::Unsupported, std::string("kolo: Adasum needs float16, float32 or float64, not ") +
                                               dtype_name(dtype));
  }
}

}  // namespace kolo::ops
