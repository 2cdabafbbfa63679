// join: a rank that has run out of data joins; the others' allreduces proceed with the
// joined ranks contributing zeros (average still divides by size()).
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
  for (int step = 0; step <= rank(); ++step) {
    std::vector<float> sum(len), avg(len);
    std::vector<int32_t> ints(len);
    for (int64_t i = 0; i < len; ++i) sum[i] = avg[i] = float(step_value(rank(), step, i));
    for (int64_t i = 0; i < len; ++i) ints[i] = int32_t(step_value(rank(), step, i));
    const std::string s = std::to_string(step);
    kolo::Handle hs = kolo::allreduce_async("join/sum/" + s, kolo::view(sum), {ReduceOp::Sum});
    kolo::Handle ha = kolo::allreduce_async("join/avg/" + s, kolo::view(avg), {ReduceOp::Average});
    kolo::Handle hi = kolo::allreduce_async("join/int/" + s, kolo::view(ints), {ReduceOp::Sum});
    // Two more small sums, fused with join/sum on the active ranks and replaced by zeros
    // inside the fusion buffer on the joined ones.
    std::vector<float> f1(5, float(rank() + 1)), f2(3, float(10 * (rank() + 1)));
    kolo::Handle h1 = kolo::allreduce_async("join/fused1/" + s, kolo::view(f1), {ReduceOp::Sum});
    kolo::Handle h2 = kolo::allreduce_async("join/fused2/" + s, kolo::view(f2), {ReduceOp::Sum});
    require_ok(h1, "join/fused1/" + s);
    require_ok(h2, "join/fused2/" + s);
    double active = 0;  // sum of (q + 1) over the ranks still active
    for (int q = step; q < n; ++q) active += q + 1;
    CHECK(f1 == std::vector<float>(5, float(active)));
    CHECK(f2 == std::vector<float>(3, float(10 * active)));
    require_ok(hs, "join/sum/" + s);
    require_ok(ha, "join/avg/" + s);
    require_ok(hi, "join/int/" + s);
    for (int64_t i = 0; i < len; ++i) {
      // Ranks q >= step are still active at this step; the others contribute zeros.
      double want = 0;
      for (int q = step; q < n; ++q) want += step_value(q, step, i);
      INFO("rank " << rank() << " step " << step << " element " << i);
      REQUIRE(sum[i] == float(want));
      REQUIRE(ints[i] == int32_t(want));
      REQUIRE(avg[i] == Approx(want / n).epsilon(1e-6));
    }
  }
  kolo::join();  // returns once every rank has joined

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
      require_ok(kolo::allreduce_async("join/cached", kolo::view(v), {ReduceOp::Sum}));
      INFO("round " << round);
      REQUIRE(v[15] == double(n * (n + 1) / 2 - 1));
    }
  }
  kolo::join();
}

TEST_CASE("join: collectives other than allreduce fail while a rank has joined", "[join][errors]") {
  if (size() < 2) {
    WARN("needs at least 2 ranks");
    return;
  }
  if (rank() == 0) {
    kolo::join();
    return;
  }
  std::vector<int32_t> b(3, rank());
  const kolo::Status s = finish(kolo::broadcast_async("join/bcast", kolo::view(b), 1));
  CHECK(s.code() == kolo::StatusCode::InvalidArgument);
  CHECK_THAT(s.message(), Catch::Matchers::Contains("join/bcast") && Catch::Matchers::Contains("joined"));
  CHECK(b == std::vector<int32_t>(3, rank()));  // untouched
  kolo::join();
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
    kolo::join();
  }
}
