// allgather, broadcast, alltoall, reducescatter and barrier against closed forms.
#include <limits>
#include <memory>
#include <thread>

#include "support/mpi_util.h"

using kolo::DType;
using kolo::ReduceOp;
using namespace kolo_test;

namespace {

// A value that fits every dtype (int8 included): small and non-negative.
double small_value(int r, int64_t row, int64_t col) { return double((r * 17 + row * 5 + col) % 100); }

}  // namespace

TEST_CASE("allgather concatenates a different number of rows from each rank, every dtype",
          "[allgather]") {
  const int n = size();
  for (DType d : all_dtypes()) {
    // Rank r contributes r + 1 rows of shape [2, 3].
    Buffer in(d, {rank() + 1, 2, 3});
    for (int64_t row = 0; row < rank() + 1; ++row)
      for (int64_t col = 0; col < 6; ++col) in.set(row * 6 + col, small_value(rank(), row, col));
    const std::string name = std::string("gather/") + kolo::dtype_name(d);
    kolo::Handle h = kolo::allgather_async(name, in.view());
    require_ok(h, name);
    const kolo::TensorView out = h.output();
    INFO(name);
    REQUIRE(out.dtype == d);
    REQUIRE(out.shape == std::vector<int64_t>{n * (n + 1) / 2, 2, 3});
    REQUIRE(out.data != nullptr);
    Buffer got(d, out.shape);
    std::memcpy(got.data(), out.data, out.num_bytes());
    int64_t row = 0;
    for (int q = 0; q < n; ++q)
      for (int64_t k = 0; k < q + 1; ++k, ++row)
        for (int64_t col = 0; col < 6; ++col) {
          INFO("rank " << q << " row " << k << " col " << col);
          REQUIRE(got.get(row * 6 + col) == small_value(q, k, col));
        }
  }
}

TEST_CASE("allgather handles ranks that contribute no rows and repeated rounds", "[allgather]") {
  const int n = size();
  for (int round = 0; round < 3; ++round) {
    // Rank r contributes r rows (rank 0 none) of 4 int64s.
    std::vector<int64_t> in(rank() * 4);
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = rank() * 1000 + int64_t(i) + round;
    kolo::Handle h = kolo::allgather_async("gather/uneven", kolo::view(in, {rank(), 4}));
    require_ok(h);
    const kolo::TensorView out = h.output();
    REQUIRE(out.shape == std::vector<int64_t>{n * (n - 1) / 2, 4});
    const int64_t* p = static_cast<const int64_t*>(out.data);
    int64_t at = 0;
    for (int q = 0; q < n; ++q)
      for (int64_t i = 0; i < q * 4; ++i, ++at) REQUIRE(p[at] == q * 1000 + i + round);
  }
  // One-dimensional, nothing from anyone.
  std::vector<float> none;
  kolo::Handle h = kolo::allgather_async("gather/empty", kolo::view(none, {0}));
  require_ok(h);
  CHECK(h.output().shape == std::vector<int64_t>{0});
}

TEST_CASE("broadcast copies the root's buffer to every rank, from every root, every dtype",
          "[broadcast]") {
  for (int round = 0; round < 2; ++round) {
    std::vector<std::unique_ptr<Buffer>> buffers;
    std::vector<kolo::Handle> handles;
    std::vector<std::pair<DType, int>> what;
    for (int root = 0; root < size(); ++root)
      for (DType d : all_dtypes()) {
        auto b = std::make_unique<Buffer>(d, std::vector<int64_t>{3, 7});
        for (int64_t i = 0; i < 21; ++i) b->set(i, small_value(rank(), i, root + round));
        handles.push_back(kolo::broadcast_async(
            "bcast/" + std::to_string(root) + "/" + kolo::dtype_name(d), b->view(), root));
        buffers.push_back(std::move(b));
        what.push_back({d, root});
      }
    require_all_ok(handles, "broadcasts");
    for (std::size_t k = 0; k < handles.size(); ++k) {
      const auto [d, root] = what[k];
      INFO("root " << root << " dtype " << kolo::dtype_name(d));
      for (int64_t i = 0; i < 21; ++i) REQUIRE(buffers[k]->get(i) == small_value(root, i, root + round));
    }
  }
}

TEST_CASE("broadcast of a large buffer and of a scalar", "[broadcast]") {
  const int root = size() - 1;
  std::vector<double> big(3'000'000);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = rank() == root ? double(i) * 0.5 : -1.0;
  kolo::broadcast("bcast/large", kolo::view(big), root);
  int64_t bad = 0;
  for (std::size_t i = 0; i < big.size(); ++i)
    if (big[i] != double(i) * 0.5) ++bad;
  CHECK(bad == 0);
  int32_t scalar = rank() == 0 ? 4242 : rank();
  kolo::broadcast("bcast/scalar", kolo::TensorView{&scalar, DType::Int32, {}}, 0);
  CHECK(scalar == 4242);
}

TEST_CASE("alltoall sends uneven splits, including empty ones, to every rank", "[alltoall]") {
  const int n = size();
  // Rank s sends (s + d) % 3 rows of width 2 to rank d; row k, column c holds a code.
  auto code = [](int s, int d, int64_t k, int64_t c) { return double(s * 1000 + d * 100 + k * 10 + c); };
  for (DType d : {DType::Float32, DType::Int32, DType::Int64, DType::Float64}) {
    std::vector<int64_t> splits(n);
    int64_t rows = 0;
    for (int dst = 0; dst < n; ++dst) rows += splits[dst] = (rank() + dst) % 3;
    Buffer in(d, {rows, 2});
    int64_t at = 0;
    for (int dst = 0; dst < n; ++dst)
      for (int64_t k = 0; k < splits[dst]; ++k, ++at)
        for (int64_t c = 0; c < 2; ++c) in.set(at * 2 + c, code(rank(), dst, k, c));
    const std::string name = std::string("a2a/uneven/") + kolo::dtype_name(d);
    kolo::Handle h = kolo::alltoall_async(name, in.view(), splits);
    require_ok(h, name);
    INFO(name);
    std::vector<int64_t> expected_splits(n);
    int64_t expected_rows = 0;
    for (int src = 0; src < n; ++src) expected_rows += expected_splits[src] = (src + rank()) % 3;
    CHECK(h.received_splits() == expected_splits);
    const kolo::TensorView out = h.output();
    REQUIRE(out.shape == std::vector<int64_t>{expected_rows, 2});
    Buffer got(d, out.shape);
    if (out.num_bytes()) std::memcpy(got.data(), out.data, out.num_bytes());
    at = 0;
    for (int src = 0; src < n; ++src)
      for (int64_t k = 0; k < expected_splits[src]; ++k, ++at)
        for (int64_t c = 0; c < 2; ++c) REQUIRE(got.get(at * 2 + c) == code(src, rank(), k, c));
  }
}

TEST_CASE("alltoall with no splits divides the first dimension equally", "[alltoall]") {
  const int n = size();
  for (DType d : {DType::Int8, DType::BFloat16}) {
    Buffer in(d, {2 * n, 3});  // two rows for each rank
    for (int64_t row = 0; row < 2 * n; ++row)
      for (int64_t c = 0; c < 3; ++c) in.set(row * 3 + c, double(rank() * 20 + row * 3 + c));
    const std::string name = std::string("a2a/equal/") + kolo::dtype_name(d);
    kolo::Handle h = kolo::alltoall_async(name, in.view());
    require_ok(h, name);
    CHECK(h.received_splits() == std::vector<int64_t>(n, 2));
    const kolo::TensorView out = h.output();
    REQUIRE(out.shape == std::vector<int64_t>{2 * n, 3});
    Buffer got(d, out.shape);
    std::memcpy(got.data(), out.data, out.num_bytes());
    // From source s we receive s's rows 2*rank and 2*rank+1.
    for (int s = 0; s < n; ++s)
      for (int64_t k = 0; k < 2; ++k)
        for (int64_t c = 0; c < 3; ++c)
          REQUIRE(got.get((s * 2 + k) * 3 + c) == double(s * 20 + (2 * rank() + k) * 3 + c));
  }
}

TEST_CASE("alltoall rejects bad splits at once", "[alltoall][errors]") {
  std::vector<float> v(2 * size() + 1);
  if (size() > 1)  // every row count divides by 1
    CHECK(immediate_failure(kolo::alltoall_async("a2a/bad/indivisible", kolo::view(v))).code() ==
          kolo::StatusCode::InvalidArgument);
  std::vector<int64_t> wrong_sum(size(), 0);
  CHECK(immediate_failure(kolo::alltoall_async("a2a/bad/sum", kolo::view(v), wrong_sum)).code() ==
        kolo::StatusCode::InvalidArgument);
  std::vector<int64_t> wrong_count(size() + 1, 0);
  wrong_count[0] = int64_t(v.size());
  CHECK(immediate_failure(kolo::alltoall_async("a2a/bad/count", kolo::view(v), wrong_count)).code() ==
        kolo::StatusCode::InvalidArgument);
  std::vector<int64_t> negative(size(), 0);
  negative[0] = int64_t(v.size()) + 1;
  if (size() > 1) negative[1] = -1;
  CHECK(immediate_failure(kolo::alltoall_async("a2a/bad/negative", kolo::view(v), negative)).code() ==
        kolo::StatusCode::InvalidArgument);
  // Splits whose sum wraps around 64 bits to the row count: they reached the other ranks and
  // ended the job as a damaged message.
  if (size() > 2) {
    std::vector<int64_t> wrapping(size(), 0);
    wrapping[0] = wrapping[1] = std::numeric_limits<int64_t>::max();
    wrapping[2] = int64_t(v.size()) + 2;
    CHECK(immediate_failure(kolo::alltoall_async("a2a/bad/wrapping", kolo::view(v), wrapping)).code() ==
          kolo::StatusCode::InvalidArgument);
  }
}

TEST_CASE("reducescatter sums and averages rows that do not divide by the size",
          "[reducescatter]") {
  const int n = size();
  const int64_t rows = 2 * n + 1, width = 3;
  auto value = [](int q, int64_t row, int64_t c) { return double((q + 1) * (row * width + c + 1) % 23); };
  // Rank r's rows: the rows split as evenly as possible, lower ranks get the extra one.
  auto rows_of = [&](int r) { return rows / n + (r < rows % n ? 1 : 0); };
  int64_t first = 0;
  for (int q = 0; q < rank(); ++q) first += rows_of(q);
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Average, ReduceOp::Max})
    for (DType d : {DType::Float32, DType::Float64, DType::Int32, DType::Float16}) {
      if (op == ReduceOp::Average && !floating(d)) continue;
      Buffer in(d, {rows, width});
      for (int64_t row = 0; row < rows; ++row)
        for (int64_t c = 0; c < width; ++c) in.set(row * width + c, value(rank(), row, c));
      const std::string name = std::string("rs/") + kolo::op_name(op) + "/" + kolo::dtype_name(d);
      kolo::Handle h = kolo::reducescatter_async(name, in.view(), op);
      require_ok(h, name);
      INFO(name);
      const kolo::TensorView out = h.output();
      REQUIRE(out.shape == std::vector<int64_t>{rows_of(rank()), width});
      Buffer got(d, out.shape);
      std::memcpy(got.data(), out.data, out.num_bytes());
      for (int64_t k = 0; k < rows_of(rank()); ++k)
        for (int64_t c = 0; c < width; ++c) {
          double want = op == ReduceOp::Max ? -1e300 : 0;
          for (int q = 0; q < n; ++q) {
            const double x = value(q, first + k, c);
            want = op == ReduceOp::Max ? std::max(want, x) : want + x;
          }
          if (op == ReduceOp::Average) want /= n;
          INFO("row " << first + k << " col " << c);
          REQUIRE(got.get(k * width + c) == Approx(want).epsilon(rounding_tolerance(d)));
        }
    }
}

TEST_CASE("reducescatter with fewer rows than ranks leaves the last ranks empty", "[reducescatter]") {
  const int n = size();
  const int64_t rows = n - 1;  // rank r < n-1 gets row r; the last rank gets nothing
  std::vector<int64_t> in(rows * 2);
  for (int64_t i = 0; i < rows * 2; ++i) in[i] = (rank() + 1) * 100 + i;
  kolo::Handle h = kolo::reducescatter_async("rs/few_rows", kolo::view(in, {rows, 2}), ReduceOp::Sum);
  require_ok(h);
  const kolo::TensorView out = h.output();
  const int64_t mine = rank() < rows ? 1 : 0;
  REQUIRE(out.shape == std::vector<int64_t>{mine, 2});
  if (mine) {
    const auto* p = static_cast<const int64_t*>(out.data);
    for (int64_t c = 0; c < 2; ++c) CHECK(p[c] == 100 * n * (n + 1) / 2 + n * (rank() * 2 + c));
  }
}

TEST_CASE("reducescatter rejects scalars at once", "[reducescatter][errors]") {
  float scalar = 0;
  CHECK(immediate_failure(kolo::reducescatter_async("rs/bad/scalar", kolo::TensorView{&scalar, DType::Float32, {}},
                                                    ReduceOp::Sum))
            .code() == kolo::StatusCode::InvalidArgument);
}

TEST_CASE("reducescatter averages integers as Horovod does, truncating toward zero", "[reducescatter][scale]") {
  const int n = size();
  std::vector<int32_t> v(static_cast<std::size_t>(2 * n));
  for (int64_t i = 0; i < 2 * n; ++i) v[static_cast<std::size_t>(i)] = rank() * 5 - static_cast<int32_t>(i) - 2;
  kolo::Handle h = kolo::reducescatter_async("rs/int_average", kolo::view(v), ReduceOp::Average);
  REQUIRE(h.wait().ok());
  const kolo::TensorView out = h.output();
  REQUIRE(out.num_elements() == 2);
  for (int64_t k = 0; k < 2; ++k) {
    const int64_t i = 2 * rank() + k;
    int64_t sum = 0;
    for (int r = 0; r < n; ++r) sum += r * 5 - i - 2;
    CHECK(static_cast<const int32_t*>(out.data)[k] == sum / n);  // C++'s / truncates toward zero too
  }
}

TEST_CASE("barrier does not return before every rank has entered it", "[barrier]") {
  using Clock = std::chrono::steady_clock;
  for (int round = 0; round < 3; ++round) {
    world_barrier();
    const auto start = Clock::now();
    if (rank() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
    kolo::barrier();
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    INFO("round " << round << ": rank " << rank() << " left the barrier after " << waited.count() << " ms");
    CHECK(waited.count() >= 250);
  }
}
