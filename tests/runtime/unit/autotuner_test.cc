// The autotuner's grid search: one trial per candidate, then the best by bytes/second.
#include <catch2/catch.hpp>

#include <set>

#include "runtime/autotuner.h"

using Catch::Matchers::StartsWith;

TEST_CASE("autotuner default grid covers thresholds and per-rank pieces scaled by size", "[autotune]") {
  const auto grid = kolo::Autotuner::default_candidates(4);
  REQUIRE(grid.size() == 12);
  std::set<int64_t> pieces_per_rank;
  for (const auto& s : grid) {
    CHECK(s.fusion_threshold_bytes > 0);
    CHECK(s.chunk_bytes % 4 == 0);
    pieces_per_rank.insert(s.chunk_bytes / 4);
  }
  // Around the default (1 MiB a rank), up to pieces that hold most tensors whole.
  CHECK(pieces_per_rank == std::set<int64_t>{int64_t{256} << 10, int64_t{1} << 20, int64_t{4} << 20, int64_t{16} << 20});
  const auto grid1 = kolo::Autotuner::default_candidates(1);
  REQUIRE(grid1.size() == grid.size());
  for (std::size_t i = 0; i < grid.size(); ++i) {
    CHECK(grid[i].chunk_bytes == grid1[i].chunk_bytes * 4);
    CHECK(grid[i].fusion_threshold_bytes == grid1[i].fusion_threshold_bytes);
  }
}

TEST_CASE("autotuner tries every candidate for a trial's bytes, then keeps the fastest", "[autotune]") {
  std::vector<kolo::TunedSetting> candidates = {{1000, 10}, {2000, 20}, {3000, 30}};
  kolo::Autotuner tuner(candidates, 100);
  CHECK_FALSE(tuner.done());
  CHECK(tuner.current() == 0);
  // Trial 0: 100 bytes in 1 s.
  tuner.record(60, 0.5);
  CHECK(tuner.current() == 0);  // not enough bytes yet
  tuner.record(40, 0.5);
  CHECK(tuner.current() == 1);
  // Trial 1: 100 bytes in 0.25 s (the fastest); idle cycles do not count.
  tuner.record(0, 5.0);
  tuner.record(100, 0.25);
  CHECK(tuner.current() == 2);
  // Trial 2: 200 bytes in 1 s.
  tuner.record(200, 1.0);
  REQUIRE(tuner.done());
  CHECK(tuner.current() == 1);
  CHECK(tuner.setting(tuner.current()).fusion_threshold_bytes == 2000);
  // One CSV line per trial: index, threshold, chunk, bytes, seconds, GB/s.
  REQUIRE(tuner.log().size() == 3);
  CHECK_THAT(tuner.log()[0], StartsWith("0,1000,10,100,1.000000,"));
  CHECK_THAT(tuner.log()[1], StartsWith("1,2000,20,100,0.250000,"));
  CHECK_THAT(tuner.log()[2], StartsWith("2,3000,30,200,1.000000,"));
  // Finished: further records change nothing.
  tuner.record(1000, 0.001);
  CHECK(tuner.current() == 1);
  CHECK(tuner.log().size() == 3);
}

TEST_CASE("autotuner with a single candidate is done at once", "[autotune]") {
  kolo::Autotuner tuner({{64, 8}}, 100);
  CHECK(tuner.done());
  CHECK(tuner.current() == 0);
  tuner.record(1000, 1);
  CHECK(tuner.log().empty());
}
