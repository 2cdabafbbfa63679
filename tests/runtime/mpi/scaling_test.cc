// Scaling folded into the MPI backend's pieces: a tensor of several allreduce pieces plus a
// partial one, with average, postscale and prescale, must come out scaled exactly once in
// every piece. The piece size is read from the configuration in effect, so the tensor spans
// several pieces whatever KOLO_ALLREDUCE_CHUNK_BYTES is (the [scaling] runs in
// CMakeLists.txt set it small). Results are compared exactly with a reference computed
// here: each element's contributions average to a small integer at any number of ranks,
// so every scaled result is exact in every floating dtype.
#include <cmath>
#include <cstring>
#include <sstream>

#include "support/mpi_util.h"

using kolo::DType;
using kolo::ReduceOp;
using namespace kolo_test;

namespace {

// Rank q's element i: mean(i) plus an offset; the offsets of all ranks add up to zero, so
// the sum over the ranks is size() * mean(i), and the average mean(i), exactly.
double mean(int64_t i) { return double(i % 13) - 6; }
double contribution(int q, int64_t i) {
  const auto offset = [](int r, int64_t k) { return double((r + k) % 5) - 2; };
  if (q < size() - 1) return mean(i) + offset(q, i);
  double rest = 0;
  for (int r = 0; r < size() - 1; ++r) rest -= offset(r, i);
  return mean(i) + rest;
}

struct Scaling {
  ReduceOp op;
  double prescale, postscale;
};

// The reduction over all ranks of prescale * x, / size for an average, * postscale.
double expected(const Scaling& s, int64_t i) {
  double acc = s.prescale * size() * mean(i);
  if (s.op == ReduceOp::Max) {
    acc = s.prescale * contribution(0, i);
    for (int q = 1; q < size(); ++q) acc = std::max(acc, s.prescale * contribution(q, i));
  }
  if (s.op == ReduceOp::Average) acc /= size();
  return acc * s.postscale;
}

// The allreduce piece size in effect: KOLO_ALLREDUCE_CHUNK_BYTES, 0 meaning 1 MiB per rank.
int64_t piece_bytes() {
  std::istringstream config(kolo::describe_configuration());
  const std::string key = "KOLO_ALLREDUCE_CHUNK_BYTES = ";
  for (std::string line; std::getline(config, line);)
    if (line.rfind(key, 0) == 0) {
      const int64_t bytes = std::stoll(line.substr(key.size()));
      return bytes > 0 ? bytes : int64_t{1024} * 1024 * size();
    }
  FAIL("no KOLO_ALLREDUCE_CHUNK_BYTES in the configuration");
  return 0;
}

}  // namespace

TEST_CASE("allreduce of a tensor of many pieces scales every piece exactly once", "[allreduce][large][scaling]") {
  // In place and out of place in turn.
  const std::vector<std::pair<Scaling, bool>> cases = {{{ReduceOp::Average, 1, 1}, true},
                                                       {{ReduceOp::Average, 1, 1}, false},
                                                       {{ReduceOp::Sum, 1, 0.375}, true},
                                                       {{ReduceOp::Average, 2, 3}, false},
                                                       {{ReduceOp::Average, -0.5, 0.375}, true},
                                                       {{ReduceOp::Max, 2, -0.5}, false}};
  // With the default pieces (1 MiB per rank) a tensor of pieces is large, and ranks
  // that share cores take seconds over it: then float32 and one 16-bit dtype only.
  const bool small_pieces = piece_bytes() <= 64 * 1024;
  std::vector<DType> dtypes = {DType::Float32, DType::Float16};
  if (small_pieces) dtypes = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};
  for (DType d : dtypes) {
    // Two whole pieces and a partial one, whose length is no multiple of anything here.
    const int64_t piece = piece_bytes() / int64_t(element_size(d));
    const int64_t count = 2 * piece + piece / 3 + 5;
    Buffer original(d, {count});
    for (int64_t i = 0; i < count; ++i) original.set(i, contribution(rank(), i));
    for (const auto& [s, in_place] : cases) {
      const std::string name = std::string("pieces/") + kolo::dtype_name(d) + "/" + kolo::op_name(s.op) + "/" +
                               std::to_string(s.prescale) + "/" + std::to_string(s.postscale) +
                               (in_place ? "/in" : "/out");
      INFO(name << ": " << count << " elements in pieces of " << piece);
      Buffer in = original, out(d, {count});
      const kolo::AllreduceOptions options{s.op, s.prescale, s.postscale};
      require_ok(in_place ? kolo::allreduce_async(name, in.view(), options)
                          : kolo::allreduce_async(name, in.view(), out.view(), options),
                 name);
      const Buffer& got = in_place ? in : out;
      int64_t wrong = 0, first = -1;
      for (int64_t i = 0; i < count; ++i)
        if (got.get(i) != expected(s, i)) {
          if (first < 0) first = i;
          ++wrong;
        }
      INFO("first wrong element " << first << " (piece " << (first >= 0 ? first / piece : -1) << "): "
                                  << (first >= 0 ? got.get(first) : 0) << ", expected "
                                  << (first >= 0 ? expected(s, first) : 0));
      CHECK(wrong == 0);
      if (!in_place) CHECK(in.bytes() == original.bytes());
    }
  }
}

TEST_CASE("reducescatter averages exactly, and leaves its input as it was", "[reducescatter][scaling]") {
  const int n = size();
  const int64_t width = 257, rows = 3 * n + 2;  // rows that do not divide by the size
  int64_t first_row = 0;
  for (int q = 0; q < rank(); ++q) first_row += rows / n + (q < rows % n ? 1 : 0);
  for (DType d : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    const std::string name = std::string("rs/exact_average/") + kolo::dtype_name(d);
    INFO(name);
    Buffer in(d, {rows, width});
    for (int64_t i = 0; i < in.count(); ++i) in.set(i, contribution(rank(), i));
    const std::vector<std::byte> before = in.bytes();
    kolo::Handle h = kolo::reducescatter_async(name, in.view(), ReduceOp::Average);
    require_ok(h, name);
    const kolo::TensorView result = h.output();
    Buffer got(d, result.shape);
    if (got.count() > 0) std::memcpy(got.data(), result.data, result.num_bytes());
    int64_t wrong = 0;
    for (int64_t k = 0; k < got.count(); ++k)
      if (got.get(k) != mean(first_row * width + k)) ++wrong;
    CHECK(wrong == 0);
    CHECK(in.bytes() == before);
  }
}
