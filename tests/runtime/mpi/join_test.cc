// join: a rank that has run out of data joins; the others' allreduces proceed with the
// joined ranks contributing zeros (average still divides by size()). Ranks that join after
// different numbers of steps are a scenario (scenarios_test.cc).
#include <future>
#include <memory>
#include <thread>

#include "support/mpi_util.h"

using kolo::DType;
using kolo::ReduceOp;
using namespace kolo_test;

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

// kolo's ring applies each rank's prescale to its neighbour's input: a joined rank that
// passed none left that neighbour's share unscaled, in tensors large enough for the ring.
TEST_CASE("join: a prescaled allreduce is right in every element while ranks have joined", "[join]") {
  const int n = size();
  if (rank() == 0) {
    for (const int64_t count : {int64_t{1000}, int64_t{100000}}) {
      std::vector<float> v(count, 1.0f);
      kolo::AllreduceOptions options{ReduceOp::Sum};
      options.prescale = 2.0;
      require_ok(kolo::allreduce_async("join/prescaled/" + std::to_string(count), kolo::view(v), options));
      int64_t wrong = 0;
      for (float x : v) wrong += x != 2.0f;
      INFO(count << " elements at np " << n);
      CHECK(wrong == 0);
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
