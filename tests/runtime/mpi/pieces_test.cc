// The MPI backend's allgather, alltoall and reducescatter in pieces (ops/mpi_backend.cc):
// with a piece of 3 elements per rank and parts of uneven lengths (0, shorter and longer
// than a piece, not a multiple of it), every element lands where one call would put it,
// and every piece counts as progress for the watchdog.
#include <atomic>
#include <numeric>

#include "ops/mpi_backend.h"
#include "support/mpi_util.h"

namespace {

constexpr int64_t kPerRank = 3;  // elements of one rank's part in a piece

struct PiecedBackend {
  PiecedBackend() {
    kolo::ops::MpiOptions options;
    options.allreduce_chunk_bytes = kPerRank * int64_t(sizeof(float)) * kolo_test::size();
    options.progress = &progress;
    backend = kolo::ops::make_mpi_backend(MPI_COMM_WORLD, options);
  }
  std::atomic<uint64_t> progress{0};
  std::unique_ptr<kolo::ops::Backend> backend;
};

// Rank r's part: 0, 2, 7, 3, 11, ... elements (longer and shorter than a piece).
int64_t part_length(int r) { return (r * 7 + 2 * (r % 2)) % 12; }
float value(int from, int to, int64_t i) { return float(from * 1000 + to * 100 + i); }

}  // namespace

TEST_CASE("MPI backend: an allgather in pieces puts every rank's part where one call would", "[pieces]") {
  const int n = kolo_test::size(), me = kolo_test::rank();
  PiecedBackend b;
  std::vector<int64_t> counts(n);
  for (int r = 0; r < n; ++r) counts[r] = part_length(r);
  std::vector<float> want;
  for (int r = 0; r < n; ++r)
    for (int64_t i = 0; i < counts[r]; ++i) want.push_back(value(r, 0, i));
  std::vector<float> input(counts[me]);
  for (int64_t i = 0; i < counts[me]; ++i) input[i] = value(me, 0, i);

  std::vector<float> output(want.size(), -1.0f);
  b.backend->allgatherv(input.data(), output.data(), counts, kolo::DType::Float32);
  CHECK(output == want);
  const int64_t longest = *std::max_element(counts.begin(), counts.end());
  CHECK(b.progress == uint64_t(std::max<int64_t>(1, (longest + kPerRank - 1) / kPerRank)));

  // In place: the input already at this rank's place in the output.
  std::vector<float> in_place(want.size(), -1.0f);
  const int64_t mine = std::accumulate(counts.begin(), counts.begin() + me, int64_t{0});
  std::copy(input.begin(), input.end(), in_place.begin() + mine);
  b.backend->allgatherv(in_place.data() + mine, in_place.data(), counts, kolo::DType::Float32);
  CHECK(in_place == want);
  kolo_test::world_barrier();
}

TEST_CASE("MPI backend: an alltoall in pieces delivers every rank's split, also when only one rank's is long",
          "[pieces]") {
  const int n = kolo_test::size(), me = kolo_test::rank();
  PiecedBackend b;
  // From rank f to rank t: (f + 2t) % 5 elements, and 10 from the last rank to rank 0, so
  // that only that pair needs the last pieces (every rank must still take part in them).
  const auto split = [n](int f, int t) -> int64_t { return f == n - 1 && t == 0 ? 10 : (f + 2 * t) % 5; };
  std::vector<int64_t> send(n), recv(n);
  std::vector<float> input, want;
  for (int t = 0; t < n; ++t) {
    send[t] = split(me, t);
    for (int64_t i = 0; i < send[t]; ++i) input.push_back(value(me, t, i));
  }
  for (int f = 0; f < n; ++f) {
    recv[f] = split(f, me);
    for (int64_t i = 0; i < recv[f]; ++i) want.push_back(value(f, me, i));
  }
  std::vector<float> output(want.size(), -1.0f);
  b.backend->alltoallv(input.data(), send, output.data(), recv, kolo::DType::Float32);
  CHECK(output == want);
  CHECK(b.progress == uint64_t((10 + kPerRank - 1) / kPerRank));
  kolo_test::world_barrier();
}

TEST_CASE("MPI backend: a reducescatter in pieces reduces and scales every rank's part", "[pieces]") {
  const int n = kolo_test::size(), me = kolo_test::rank();
  PiecedBackend b;
  std::vector<int64_t> counts(n);
  for (int r = 0; r < n; ++r) counts[r] = part_length(r) + (r == 0 ? 1 : 0);  // rank 0 gets one
  const int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t{0});
  // Element j of every rank's input: (rank + 1) * (j + 1); the sum over ranks is
  // (j + 1) * n (n + 1) / 2, then halved.
  std::vector<float> input(total);
  for (int64_t j = 0; j < total; ++j) input[j] = float((me + 1) * (j + 1));
  const std::vector<float> original = input;
  const int64_t mine = std::accumulate(counts.begin(), counts.begin() + me, int64_t{0});
  std::vector<float> want(counts[me]);
  for (int64_t i = 0; i < counts[me]; ++i) want[i] = float((mine + i + 1) * n * (n + 1) / 2) * 0.5f;

  std::vector<float> output(counts[me], -1.0f);
  b.backend->reducescatter(input.data(), output.data(), counts, kolo::DType::Float32, kolo::ReduceOp::Sum, 0.5);
  CHECK(output == want);
  CHECK(input == original);  // the input is never written
  const int64_t longest = *std::max_element(counts.begin(), counts.end());
  CHECK(b.progress == uint64_t((longest + kPerRank - 1) / kPerRank));
  kolo_test::world_barrier();
}
