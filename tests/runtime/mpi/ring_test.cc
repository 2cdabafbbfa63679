// kolo's ring allreduce (ops/ring_allreduce.h) and the MPI backend's choice between it and
// MPI_Allreduce, at np 1-4: values against a reference computed here from every rank's
// known input, the scale applied once, uneven segments (fewer elements than ranks, counts
// that no rank count divides), in place and not, and the same bits on every rank.
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

#include "ops/dtype.h"
#include "ops/mpi_backend.h"
#include "ops/ring_allreduce.h"
#include "support/mpi_util.h"

using kolo::DType;
using kolo::ReduceOp;
using kolo_test::Buffer;

namespace {

// Rank r's element i: 0 to 3, so that every sum, min, max and product of up to four ranks
// is exact in every dtype (int8 included: 3^4 = 81).
double input_value(int r, int64_t i) { return double((r + 1 + i) % 4); }

double reduce_reference(ReduceOp op, int ranks, int64_t i) {
  double acc = input_value(0, i);
  for (int r = 1; r < ranks; ++r) {
    const double v = input_value(r, i);
    switch (op) {
      case ReduceOp::Min: acc = std::min(acc, v); break;
      case ReduceOp::Max: acc = std::max(acc, v); break;
      case ReduceOp::Product: acc *= v; break;
      default: acc += v; break;
    }
  }
  return acc;
}

// Every rank's bytes equal to rank 0's.
bool same_on_every_rank(const std::vector<std::byte>& bytes) {
  std::vector<std::byte> root = bytes;
  MPI_Bcast(root.data(), int(root.size()), MPI_BYTE, 0, MPI_COMM_WORLD);
  int same = root == bytes, all = 0;
  MPI_Allreduce(&same, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return all != 0;
}

}  // namespace

TEST_CASE("ring allreduce: every dtype and op, counts below, at and above the number of ranks", "[ring]") {
  const int n = kolo_test::size(), me = kolo_test::rank();
  std::vector<std::byte> scratch;
  for (int64_t count : {int64_t{0}, int64_t{1}, int64_t(n - 1), int64_t(n), int64_t{1001}})
    for (DType d : kolo_test::all_dtypes())
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max, ReduceOp::Product})
        for (bool in_place : {true, false}) {
          INFO(count << " x " << kolo::dtype_name(d) << " " << kolo::op_name(op) << (in_place ? " in place" : ""));
          Buffer input(d, {count}), output(d, {count});
          for (int64_t i = 0; i < count; ++i) {
            input.set(i, input_value(me, i));
            output.set(i, 99);  // a stale value the result must replace
          }
          const Buffer original = input;
          Buffer& result = in_place ? input : output;
          kolo::ops::ring_allreduce(MPI_COMM_WORLD, input.data(), result.data(), int(count), d, op, 1.0, 1.0, scratch);
          for (int64_t i = 0; i < count; ++i) {
            INFO("element " << i);
            REQUIRE(result.get(i) == reduce_reference(op, n, i));
          }
          if (!in_place) CHECK(input.bytes() == original.bytes());
        }
  kolo_test::world_barrier();
}

TEST_CASE("ring allreduce: an average is the exact sum divided once, correctly rounded", "[ring]") {
  const int n = kolo_test::size(), me = kolo_test::rank();
  std::vector<std::byte> scratch;
  const int count = 4099;
  // Integers up to 2^20: every partial sum is exact, so the only rounding is the division,
  // which IEEE division gets right in float and in double alike.
  std::vector<float> f(count);
  std::vector<double> g(count);
  for (int i = 0; i < count; ++i) f[i] = float(g[i] = double((i * 7919 + me * 104729) % (1 << 20)));
  kolo::ops::ring_allreduce(MPI_COMM_WORLD, f.data(), f.data(), count, DType::Float32, ReduceOp::Sum, 1.0, 1.0 / n, scratch);
  kolo::ops::ring_allreduce(MPI_COMM_WORLD, g.data(), g.data(), count, DType::Float64, ReduceOp::Sum, 1.0, 1.0 / n, scratch);
  for (int i = 0; i < count; ++i) {
    double sum = 0;
    for (int r = 0; r < n; ++r) sum += double((i * 7919 + r * 104729) % (1 << 20));
    INFO("element " << i);
    REQUIRE(f[i] == float(sum) / float(n));
    REQUIRE(g[i] == sum / double(n));
  }
  kolo_test::world_barrier();
}

// What the MPI_Allreduce path gives (a reduction, then ops::scale on the result): the
// ring's scale, folded into its last reduce-scatter step, must give the same bits for
// every dtype (integers scaled in double and rounded, 16-bit floats rounded after the
// reduction and again after the scale) and op.
TEST_CASE("ring allreduce: a scaled result has the bits of the reduction scaled afterwards, every dtype and op",
          "[ring]") {
  const int n = kolo_test::size(), me = kolo_test::rank();
  std::vector<std::byte> scratch;
  for (int64_t count : {int64_t(n - 1), int64_t{1001}})
    for (DType d : kolo_test::all_dtypes())
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max, ReduceOp::Product})
        for (double factor : {1.0 / 3.0, 0.37, 2.0}) {
          INFO(count << " x " << kolo::dtype_name(d) << " " << kolo::op_name(op) << " scaled by " << factor);
          Buffer input(d, {count}), scaled(d, {count}), reference(d, {count});
          for (int64_t i = 0; i < count; ++i) input.set(i, input_value(me, i) * 7 + 1);
          kolo::ops::ring_allreduce(MPI_COMM_WORLD, input.data(), reference.data(), int(count), d, op, 1.0, 1.0, scratch);
          kolo::ops::scale(reference.data(), count, d, factor);
          kolo::ops::ring_allreduce(MPI_COMM_WORLD, input.data(), scaled.data(), int(count), d, op, 1.0, factor, scratch);
          REQUIRE(scaled.bytes() == reference.bytes());
        }
  kolo_test::world_barrier();
}

// What the executor did before the ring took the prescale (each rank scaling its input in a
// pass of its own, then the ring): the ring's prescale, applied as it reads each input,
// must give the same bits, alone and with a scale after, in place and not.
TEST_CASE("ring allreduce: a prescale has the bits of each input scaled first, every dtype and op", "[ring]") {
  const int n = kolo_test::size(), me = kolo_test::rank();
  std::vector<std::byte> scratch;
  for (int64_t count : {int64_t(n - 1), int64_t{1001}})
    for (DType d : kolo_test::all_dtypes())
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max, ReduceOp::Product})
        for (double prescale : {1.0 / 3.0, 0.37, 2.0})
          for (double scale : {1.0, 0.5, 1.0 / 3.0})
            for (bool in_place : {true, false}) {
              INFO(count << " x " << kolo::dtype_name(d) << " " << kolo::op_name(op) << " prescale " << prescale
                         << " scale " << scale << (in_place ? " in place" : ""));
              Buffer input(d, {count}), output(d, {count}), reference(d, {count});
              for (int64_t i = 0; i < count; ++i) input.set(i, input_value(me, i) * 7 + 1);
              Buffer prescaled = input;
              kolo::ops::scale(prescaled.data(), count, d, prescale);
              kolo::ops::ring_allreduce(MPI_COMM_WORLD, prescaled.data(), reference.data(), int(count), d, op, 1.0,
                                        scale, scratch);
              Buffer& result = in_place ? input : output;
              kolo::ops::ring_allreduce(MPI_COMM_WORLD, input.data(), result.data(), int(count), d, op, prescale,
                                        scale, scratch);
              REQUIRE(result.bytes() == reference.bytes());
            }
  kolo_test::world_barrier();
}

TEST_CASE("ring allreduce: inexact float sums come out with the same bits on every rank", "[ring]") {
  const int n = kolo_test::size(), me = kolo_test::rank();
  std::vector<std::byte> scratch;
  const int count = 10007;
  std::mt19937 gen(1234 + me);
  std::uniform_real_distribution<float> value(-1, 1);
  std::vector<float> x(count);
  for (float& v : x) v = value(gen);
  std::vector<float> all(std::size_t(count) * n);  // every rank's input, for the reference
  MPI_Allgather(x.data(), count, MPI_FLOAT, all.data(), count, MPI_FLOAT, MPI_COMM_WORLD);
  kolo::ops::ring_allreduce(MPI_COMM_WORLD, x.data(), x.data(), count, DType::Float32, ReduceOp::Sum, 1.0, 0.3, scratch);
  for (int i = 0; i < count; ++i) {
    double sum = 0;
    for (int r = 0; r < n; ++r) sum += all[std::size_t(r) * count + i];
    REQUIRE(std::abs(x[i] - sum * 0.3) <= 1e-6);
  }
  std::vector<std::byte> bytes(std::size_t(count) * sizeof(float));
  std::memcpy(bytes.data(), x.data(), bytes.size());
  CHECK(same_on_every_rank(bytes));
  kolo_test::world_barrier();
}

// A call whose first pieces are large enough for the ring and whose last is not: both
// paths, one scale each, no element scaled twice or not at all.
TEST_CASE("MPI backend: an average of ring pieces and a short MPI piece is scaled once", "[ring]") {
  const int n = kolo_test::size(), me = kolo_test::rank();
  kolo::ops::MpiOptions options;
  options.allreduce_chunk_bytes = int64_t{256} * 1024 * n;  // the default
  auto backend = kolo::ops::make_mpi_backend(MPI_COMM_WORLD, options);
  const int64_t piece = options.allreduce_chunk_bytes / int64_t(sizeof(float));
  const int64_t count = 2 * piece + 1000;  // the last piece: 4000 bytes, far below the ring's minimum
  std::vector<float> input(count), output(count, -1);
  for (int64_t i = 0; i < count; ++i) input[i] = float(i % 5000 + me);
  backend->allreduce(input.data(), output.data(), count, DType::Float32, ReduceOp::Sum, 0.5);
  const double rank_sum = double(n) * (n - 1) / 2;
  for (int64_t i = 0; i < count; ++i) {
    INFO("element " << i);
    REQUIRE(output[i] == float((double(i % 5000) * n + rank_sum) * 0.5));
  }
  backend->allreduce(input.data(), input.data(), count, DType::Float32, ReduceOp::Sum, 0.5);  // in place
  CHECK(input == output);
  kolo_test::world_barrier();
}
