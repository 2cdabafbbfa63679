// The scenarios of tests/runtime/scenarios/, in-process at 2, 3, 4 and 8 ranks, in
// simulated time. The same scenarios run under mpirun in
// tests/runtime/mpi/scenarios_test.cc.
#include <catch2/catch.hpp>

#include "inprocess/job.h"
#include "scenarios/collective_scenarios.h"
#include "scenarios/error_scenarios.h"

using kolo_inprocess::Job;
using kolo_inprocess::JobOptions;

namespace {

void run_scenario(void (*scenario)(kolo_scenarios::Peer&), const std::function<void(JobOptions&)>& configure = {}) {
  const int size = GENERATE(2, 3, 4, 8);
  INFO(size << " ranks");
  JobOptions options;
  options.size = size;
  options.config = kolo_inprocess::scenario_config();
  if (configure) configure(options);
  Job job(options);
  CHECK(job.run(scenario) > 0);
}

}  // namespace

TEST_CASE("in-process: allreduce of every dtype and op is exact round after round, later rounds by cache bit",
          "[inprocess][scenario]") {
  run_scenario(kolo_scenarios::allreduce_rounds_are_exact_and_cached);
}

TEST_CASE("in-process: many tiny tensors are fused into a handful of calls with exact sums", "[inprocess][scenario]") {
  run_scenario(kolo_scenarios::many_tiny_tensors_fuse);
}

TEST_CASE("in-process: tensors submitted in a different order on every rank are exact", "[inprocess][scenario]") {
  run_scenario(kolo_scenarios::submission_order_differs_per_rank);
}

TEST_CASE("in-process: allgather, broadcast, alltoall and reducescatter are exact", "[inprocess][scenario]") {
  run_scenario(kolo_scenarios::other_collectives_are_exact);
}

TEST_CASE("in-process: join reduces over the ranks still active", "[inprocess][scenario]") {
  run_scenario(kolo_scenarios::join_reduces_over_the_ranks_still_active);
}

TEST_CASE("in-process: mismatches fail on every rank naming tensor, field and ranks",
          "[inprocess][scenario]") {
  run_scenario(kolo_scenarios::mismatches_fail_on_every_rank);
}

TEST_CASE("in-process: mismatched and good tensors in one burst each get their own result",
          "[inprocess][scenario]") {
  run_scenario(kolo_scenarios::mismatched_and_good_tensors_in_one_burst);
}

TEST_CASE("in-process: a cached tensor that changes shape fails on every rank", "[inprocess][scenario]") {
  run_scenario(kolo_scenarios::cached_tensor_changing_shape_fails_on_every_rank);
}

TEST_CASE("in-process: a tensor missing on some ranks warns, then fails as Stalled, in simulated time",
          "[inprocess][scenario]") {
  run_scenario(kolo_scenarios::stalled_tensor_warns_then_fails, [](JobOptions& options) {
    options.config.stall_check_seconds = 2;
    options.config.stall_shutdown_seconds = 5;
  });
}

TEST_CASE("in-process: a hung rank makes the others fail with CommFailure after the control timeout",
          "[inprocess][scenario]") {
  run_scenario(kolo_scenarios::hung_rank_fails_the_others_with_comm_failure,
               [](JobOptions& options) { options.config.control_timeout_seconds = 5; });
}

TEST_CASE("in-process: the scenarios also run on the hierarchical collectives of a forced node layout",
          "[inprocess][scenario][hierarchical]") {
  const int size = GENERATE(4, 8);
  INFO(size << " ranks on nodes of 2");
  JobOptions options;
  options.size = size;
  options.local_size = 2;
  options.config = kolo_inprocess::scenario_config();
  options.config.hierarchical_allreduce = true;
  options.config.hierarchical_allgather = true;
  Job job(options);
  CHECK(job.run(kolo_scenarios::allreduce_rounds_are_exact_and_cached) > 0);
  CHECK(job.run(kolo_scenarios::other_collectives_are_exact) > 0);
}

TEST_CASE("in-process: ranks started with different shared settings all run with rank 0's",
          "[inprocess][scenario][settings]") {
  JobOptions options;
  options.size = 3;
  options.config = kolo_inprocess::scenario_config();
  options.adjust = [](int rank, kolo::Config& config) {
    config.fusion_threshold_bytes = rank == 0 ? 4096 : 0;
    config.cache_capacity = rank == 0 ? 100 : 3;
    config.stall_check_seconds = 30 + rank;  // each rank's own
  };
  Job job(options);
  CHECK(job.run([](kolo_scenarios::Peer& peer) {
    const kolo::Config& s = peer.settings();
    PEER_CHECK(peer, s.fusion_threshold_bytes == 4096 && s.cache_capacity == 100,
               "fusion threshold " << s.fusion_threshold_bytes << ", cache capacity " << s.cache_capacity);
    PEER_CHECK(peer, s.stall_check_seconds == 30 + peer.rank(), "stall check " << s.stall_check_seconds);
    kolo_scenarios::allreduce_rounds_are_exact_and_cached(peer);
    kolo_scenarios::many_tiny_tensors_fuse(peer);
  }) > 0);
}

TEST_CASE("in-process: a GPU tensor fails with an error saying why, and the job goes on", "[inprocess][gpu]") {
  JobOptions options;
  options.size = 2;
  options.config = kolo_inprocess::scenario_config();
  Job job(options);
  CHECK(job.run([](kolo_scenarios::Peer& peer) {
    std::vector<float> v(4, 1.0f);
    const kolo::TensorView on_gpu{v.data(), kolo::DType::Float32, {4}, kolo::Device::cuda(0)};
    const kolo::Status s = peer.wait(kolo::allreduce_async("scn/gpu", on_gpu));
    // Host memory said to be on cuda:0: a bad tensor where the build has CUDA; a build
    // without it cannot take GPU tensors at all.
    const kolo::StatusCode expected =
        kolo::build_info().cuda ? kolo::StatusCode::InvalidArgument : kolo::StatusCode::Unsupported;
    PEER_CHECK(peer, s.code() == expected, kolo_scenarios::describe(s));
    PEER_CHECK(peer, kolo_scenarios::contains(s.message(), "GPU") || kolo_scenarios::contains(s.message(), "CUDA"),
               s.message());
    std::vector<float> after(3, 1.0f);
    const kolo::Status ok = peer.wait(kolo::allreduce_async("scn/after_gpu", kolo::view(after)));
    PEER_CHECK(peer, ok.ok() && after == std::vector<float>(3, 1.0f), kolo_scenarios::describe(ok));
  }) > 0);
}
