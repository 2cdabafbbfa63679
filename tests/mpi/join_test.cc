// join: a rank that has run out of data joins; the others' allreduces proceed with the
// joined ranks contributing zeros (average still divides by size()).
#include <future>
#include <memory>
#include <thread>

#include "mpi_util.h"

using kolo::DType;
using kolo::ReduceOp;
using namespace kolo_test;

namespace {

double step_value(int r, int step, int64_t i) { return double((r + 1) * (i % 5 + 1) + step); }

}  // namespace

TEST_CASE("join: rank r runs r+1 steps; later steps reduce over the ranks still active",
          "[join]") {
  const int n = size();
  const int64_t len = 37;
  // No REQUIRE before join(): a rank that skipped it would leave the others waiting.
  for (int step = 0; step <= rank(); ++step) {
    std::vector<float> sum(len), avg(len);
    std::vector<int32_t> ints(len);
    for (int64_t i = 0; i < len; ++i) sum[i] = avg[i] = float(step_value(rank(), step, i));
    for (int64_t i = 0; i < len; ++i) ints[i] = int32_t(step_value(rank(), step, i));
    // Small sums that fuse with each other: on a joined rank their zeros are written into
    // the fusion buffer.
    std::vector<float> f1(5, float(rank() + 1)), f2(3, float(10 * (rank() + 1)));
    std::vector<int32_t> i1(4, rank() + 1), i2(6, 100 * (rank() + 1));
    const std::string s = std::to_string(step);
    const std::vector<kolo::Handle> handles = {
        kolo::allreduce_async("join/sum/" + s, kolo::view(sum), {ReduceOp::Sum}),
        kolo::allreduce_async("join/avg/" + s, kolo::view(avg), {ReduceOp::Average}),
        kolo::allreduce_async("join/int/" + s, kolo::view(ints), {ReduceOp::Sum}),
        kolo::allreduce_async("join/fused1/" + s, kolo::view(f1), {ReduceOp::Sum}),
        kolo::allreduce_async("join/fused2/" + s, kolo::view(f2), {ReduceOp::Sum}),
        kolo::allreduce_async("join/ifused1/" + s, kolo::view(i1), {ReduceOp::Sum}),
        kolo::allreduce_async("join/ifused2/" + s, kolo::view(i2), {ReduceOp::Sum})};
    for (const kolo::Handle& h : handles) {
      const kolo::Status st = h.wait_for(kOpTimeout);
      if (st.code() == kolo::StatusCode::Pending) abort_on_timeout("join step " + std::to_string(step));
      INFO("step " << step << ": " << code_name(st.code()) << " " << st.message());
      CHECK(st.ok());
    }
    double active = 0;  // sum of (q + 1) over the ranks still active (q >= step)
    for (int q = step; q < n; ++q) active += q + 1;
    INFO("rank " << rank() << " step " << step);
    CHECK(f1 == std::vector<float>(5, float(active)));
    CHECK(f2 == std::vector<float>(3, float(10 * active)));
    CHECK(i1 == std::vector<int32_t>(4, int32_t(active)));
    CHECK(i2 == std::vector<int32_t>(6, int32_t(100 * active)));
    int64_t bad = 0;
    for (int64_t i = 0; i < len; ++i) {
      double want = 0;  // ranks that have joined contribute zeros
      for (int q = step; q < n; ++q) want += step_value(q, step, i);
      if (sum[i] != float(want) || ints[i] != int32_t(want) || avg[i] != Approx(want / n).epsilon(1e-6)) ++bad;
    }
    CHECK(bad == 0);
  }
  bounded_join();

  // Afterwards every rank takes part again.
  std::vector<float> after(8, float(rank() + 1));
  require_ok(kolo::allreduce_async("join/after", kolo::view(after), {ReduceOp::Sum}));
  CHECK(after[7] == float(n * (n + 1) / 2));
}

TEST_CASE("join: allreduce of cached tensors proceeds with joined ranks contributing zeros",
          "[join]") {
  const int n = size();
  // Two warm-up rounds on every rank put the name in every rank's response cache.
  std::vector<double> v(16);
  for (int round = 0; round < 2; ++round) {
    std::fill(v.begin(), v.end(), double(rank() + 1));
    require_ok(kolo::allreduce_async("join/cached", kolo::view(v), {ReduceOp::Sum}));
    REQUIRE(v[0] == double(n * (n + 1) / 2));
  }
  // Rank 0 joins at once; the others run three more rounds without it.
  if (rank() != 0) {
    for (int round = 0; round < 3; ++round) {
      std::fill(v.begin(), v.end(), double(rank() + 1));
      const kolo::Status st = finish(kolo::allreduce_async("join/cached", kolo::view(v), {ReduceOp::Sum}));
      INFO("round " << round << ": " << st.message());
      CHECK(st.ok());
      CHECK(v[15] == double(n * (n + 1) / 2 - 1));
    }
  }
  bounded_join();
}

TEST_CASE("join: collectives other than allreduce fail while a rank has joined", "[join][errors]") {
  if (size() < 2) {
    WARN("needs at least 2 ranks");
    return;
  }
  if (rank() == 0) {
    bounded_join();
    return;
  }
  std::vector<int32_t> b(3, rank());
  const kolo::Status s = finish(kolo::broadcast_async("join/bcast", kolo::view(b), 1));
  CHECK(s.code() == kolo::StatusCode::InvalidArgument);
  CHECK_THAT(s.message(), Catch::Matchers::Contains("join/bcast") && Catch::Matchers::Contains("joined"));
  CHECK(b == std::vector<int32_t>(3, rank()));  // untouched
  bounded_join();
}

TEST_CASE("join twice on one rank is rejected while the first is pending", "[join][errors]") {
  if (size() < 2) {
    WARN("needs at least 2 ranks");
    return;
  }
  // Rank 0 joins last, so the others' joins are still pending when they try again.
  if (rank() != 0) {
    std::thread joiner([] { kolo::join(); });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    try {
      kolo::join();
      FAIL("a second join() returned normally");
    } catch (const kolo::Error& e) {
      CHECK(e.code() == kolo::StatusCode::InvalidArgument);
    }
    world_barrier();
    joiner.join();
  } else {
    world_barrier();
    bounded_join();
  }
}
