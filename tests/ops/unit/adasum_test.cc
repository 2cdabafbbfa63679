// ops/adasum: the pair's coefficients, and the whole halving scheme with ranks as threads
// (ThreadGroup's sendrecv) at 1, 2, 4 and 8 ranks, against the direct evaluation of the
// pairwise tree (support/adasum_reference.h), for float16, float32 and float64.
#include <catch2/catch.hpp>

#include <cfloat>
#include <numeric>
#include <string>
#include <thread>

#include "ops/adasum.h"
#include "support/adasum_reference.h"
#include "support/thread_group.h"
#include "support/values.h"

using kolo::DType;
using kolo_test::AdasumTensors;
namespace ops = kolo::ops;

namespace {

struct AdasumRun {
  std::vector<AdasumTensors> results;  // by rank
  std::vector<std::vector<std::byte>> bytes;  // each rank's buffer, bit for bit
  std::vector<std::string> errors;
};

// Every rank runs adasum_allreduce on its own fused buffer of `vectors[rank]`.
AdasumRun run_adasum(DType d, const std::vector<int64_t>& counts, const std::vector<AdasumTensors>& vectors) {
  const int size = static_cast<int>(vectors.size());
  const int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t{0});
  std::vector<kolo_test::Buffer> buffers;
  for (int r = 0; r < size; ++r) {
    buffers.emplace_back(d, std::vector<int64_t>{total});
    int64_t i = 0;
    for (const auto& tensor : vectors[static_cast<std::size_t>(r)])
      for (long double x : tensor) buffers.back().set(i++, static_cast<double>(x));
  }
  kolo::testing::ThreadGroup group(size);
  AdasumRun run;
  run.errors.resize(static_cast<std::size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r)
    threads.emplace_back([&, r] {
      try {
        auto backend = group.member(r);
        std::vector<std::byte> scratch;
        ops::adasum_allreduce(buffers[static_cast<std::size_t>(r)].data(), counts, d, r, size, *backend, scratch);
      } catch (const std::exception& e) {
        run.errors[static_cast<std::size_t>(r)] = "rank " + std::to_string(r) + ": " + e.what();
      }
    });
  for (std::thread& t : threads) t.join();
  for (const std::string& m : group.mismatches()) run.errors.push_back(m);
  for (const kolo_test::Buffer& b : buffers) {
    AdasumTensors tensors(counts.size());
    int64_t i = 0;
    for (std::size_t t = 0; t < counts.size(); ++t)
      for (int64_t k = 0; k < counts[t]; ++k) tensors[t].push_back(b.get(i++));
    run.results.push_back(std::move(tensors));
    run.bytes.push_back(b.bytes());
  }
  return run;
}

void check_against_reference(DType d, int size, const std::vector<int64_t>& counts,
                             const std::vector<long double>& scales) {
  const std::vector<AdasumTensors> vectors = kolo_test::adasum_vectors(d, size, counts, scales);
  const AdasumTensors want = kolo_test::adasum_tree(vectors, d);
  const AdasumRun run = run_adasum(d, counts, vectors);
  for (const std::string& e : run.errors) {
    INFO(e);
    REQUIRE(e.empty());
  }
  for (int r = 0; r < size; ++r) {
    // Every rank ends with the same bits: the coefficients were computed alike everywhere.
    CHECK(run.bytes[static_cast<std::size_t>(r)] == run.bytes[0]);
    for (std::size_t t = 0; t < counts.size(); ++t) {
      INFO(kolo::dtype_name(d) << " at " << size << " ranks: rank " << r << ", tensor " << t << " of "
                               << counts[t] << " elements");
      CHECK(kolo_test::relative_error(run.results[static_cast<std::size_t>(r)][t], want[t]) <=
            kolo_test::adasum_tolerance(d));
    }
  }
}

// Fused tensors of odd lengths, of one element, and shorter than the number of ranks.
const std::vector<int64_t> kCounts = {5, 1, 3, 1000, 2, 17, 64};

}  // namespace

TEST_CASE("adasum coefficients: orthogonal vectors add, equal ones average, zeros leave the other", "[adasum]") {
  const ops::AdasumCoefficients orthogonal = ops::adasum_coefficients(0, 4, 9);
  CHECK(orthogonal.a == 1);
  CHECK(orthogonal.b == 1);
  const ops::AdasumCoefficients equal = ops::adasum_coefficients(4, 4, 4);  // a = b
  CHECK(equal.a == 0.5L);
  CHECK(equal.b == 0.5L);
  const ops::AdasumCoefficients zero_b = ops::adasum_coefficients(0, 4, 0);
  CHECK(zero_b.a == 1);
  CHECK(zero_b.b == 1);
  // a = (1, 0), b = (1, 1): a·b = 1, ‖a‖² = 1, ‖b‖² = 2: 1 − 1/2 and 1 − 1/4.
  const ops::AdasumCoefficients skew = ops::adasum_coefficients(1, 1, 2);
  CHECK(skew.a == 0.5L);
  CHECK(skew.b == 0.75L);
  // Norms far below double's range (float64 data near its smallest normal, squared).
  const long double tiny = 1e-400L;
  const ops::AdasumCoefficients small = ops::adasum_coefficients(tiny * tiny, tiny * tiny, 4 * tiny * tiny);
  CHECK(small.a == Approx(0.5));
  CHECK(small.b == Approx(0.875));
}

TEST_CASE("adasum over ranks as threads matches the pairwise tree", "[adasum]") {
  for (DType d : {DType::Float16, DType::Float32, DType::Float64})
    for (int size : {1, 2, 4, 8}) {
      check_against_reference(d, size, kCounts, {1.0L});
      check_against_reference(d, size, kCounts, kolo_test::adasum_wide_scales(d));
    }
}

TEST_CASE("adasum of a buffer smaller than the number of ranks, and of an empty one", "[adasum]") {
  for (DType d : {DType::Float32, DType::Float64}) {
    check_against_reference(d, 8, {1}, kolo_test::adasum_wide_scales(d));
    check_against_reference(d, 8, {2, 1}, kolo_test::adasum_wide_scales(d));
    check_against_reference(d, 4, {0, 3, 0}, {1.0L});
    check_against_reference(d, 4, {}, {1.0L});
  }
}

TEST_CASE("adasum keeps float64 sums of squares of the smallest normals", "[adasum]") {
  // Double's squares of 4 · 2.2e-308 underflow to 0: a coefficient of 1 would then add the
  // vectors instead of combining them.
  check_against_reference(DType::Float64, 2, {7, 100}, {1.0L, 4 * static_cast<long double>(DBL_MIN)});
  check_against_reference(DType::Float64, 4, {7, 100}, {4 * static_cast<long double>(DBL_MIN), 1e150L});
}

TEST_CASE("adasum refuses a rank count that is not a power of two, and integers", "[adasum]") {
  std::vector<float> data(4, 1.0f);
  std::vector<std::byte> scratch;
  const std::vector<int64_t> counts = {4};
  kolo::testing::ThreadGroup group(1);
  auto backend = group.member(0);
  try {
    ops::adasum_allreduce(data.data(), counts, DType::Float32, 0, 3, *backend, scratch);
    FAIL("no error");
  } catch (const kolo::Error& e) {
    CHECK(e.code() == kolo::StatusCode::InvalidArgument);
    CHECK_THAT(e.what(), Catch::Matchers::Contains("power-of-two number of ranks") && Catch::Matchers::Contains("3"));
  }
  std::vector<int32_t> ints(4, 1);
  try {
    ops::adasum_allreduce(ints.data(), counts, DType::Int32, 0, 1, *backend, scratch);
    FAIL("no error");
  } catch (const kolo::Error& e) {
    CHECK(e.code() == kolo::StatusCode::Unsupported);
    CHECK_THAT(e.what(), Catch::Matchers::Contains("int32"));
  }
}
