// Process sets and the rest of Horovod's surface (scenarios/process_set_scenarios.h) with
// ranks as threads, at 2, 3 and 4 ranks, in simulated time; and what only the in-process
// job can stage: static sets, a set whose rank stalls, and dynamic sets switched off.
#include <catch2/catch.hpp>

#include <thread>

#include "inprocess/job.h"
#include "kolo/elastic.h"
#include "runtime/runtime.h"
#include "runtime/timeline.h"
#include "scenarios/process_set_scenarios.h"

using kolo_inprocess::Job;
using kolo_inprocess::JobOptions;
using kolo_scenarios::contains;
using kolo_scenarios::describe;

namespace {

JobOptions dynamic_sets(int size) {
  JobOptions options;
  options.size = size;
  options.config = kolo_inprocess::scenario_config();
  options.config.dynamic_process_sets = true;
  return options;
}

void run_scenario(void (*scenario)(kolo_scenarios::Peer&)) {
  const int size = GENERATE(2, 3, 4);
  INFO(size << " ranks");
  Job job(dynamic_sets(size));
  CHECK(job.run(scenario) > 0);
}

}  // namespace

TEST_CASE("in-process: every operation on overlapping, disjoint and singleton process sets is exact",
          "[inprocess][process_sets]") {
  run_scenario(kolo_scenarios::every_op_on_overlapping_disjoint_and_singleton_sets);
}

TEST_CASE("in-process: process set errors are clear on every rank and kolo goes on", "[inprocess][process_sets]") {
  run_scenario(kolo_scenarios::process_set_errors_are_clear_on_every_rank);
}

TEST_CASE("in-process: a set waiting for a rank does not hold up another set", "[inprocess][process_sets]") {
  run_scenario(kolo_scenarios::a_waiting_set_does_not_hold_up_another);
}

TEST_CASE("in-process: grouped allgather and reducescatter run as one unit", "[inprocess][grouped]") {
  run_scenario(kolo_scenarios::grouped_collectives_run_as_one_unit);
}

TEST_CASE("in-process: unnamed operations match in submission order", "[inprocess][names]") {
  run_scenario(kolo_scenarios::unnamed_operations_match_in_submission_order);
}

TEST_CASE("in-process: byte buffers of 0 B, 1 B and 10 MB are broadcast and allgathered", "[inprocess][bytes]") {
  run_scenario(kolo_scenarios::byte_buffers_of_any_size);
}

TEST_CASE("in-process: byte buffer sizes from other ranks are checked against the bytes", "[inprocess][bytes]") {
  run_scenario(kolo_scenarios::byte_buffer_sizes_from_other_ranks_are_checked);
}

TEST_CASE("in-process: join returns the last rank to join", "[inprocess][join]") {
  run_scenario(kolo_scenarios::join_returns_the_last_rank_to_join);
}

TEST_CASE("in-process: a second join after cached allreduces returns its own last rank", "[inprocess][join]") {
  run_scenario(kolo_scenarios::a_second_join_after_cached_allreduces_returns_its_own_last_rank);
}

TEST_CASE("in-process: automatic names stay in step after an operation some ranks did not run", "[inprocess][names]") {
  run_scenario(kolo_scenarios::automatic_names_stay_in_step_after_an_operation_some_ranks_did_not_run);
}

TEST_CASE("in-process: static process sets get ids in the order listed and run at once", "[inprocess][process_sets]") {
  JobOptions options;
  options.size = 4;
  options.config = kolo_inprocess::scenario_config();
  options.process_sets = {{3, 1}, {0, 2}, {0, 1, 2}};
  Job job(options);
  CHECK(job.run([](kolo_scenarios::Peer& peer) {
    const std::map<int, std::vector<int>> table = kolo::process_sets();
    PEER_CHECK(peer, table.size() == 4 && table.at(1) == (std::vector<int>{1, 3}) &&
                         table.at(2) == (std::vector<int>{0, 2}) && table.at(3) == (std::vector<int>{0, 1, 2}),
               "the static sets' table");
    std::vector<kolo::Handle> handles;
    std::vector<std::vector<float>> values;
    values.reserve(3);
    for (int id = 1; id <= 3; ++id) {
      const kolo::ProcessSet set(id);
      if (!set.included()) continue;
      values.emplace_back(2, static_cast<float>(peer.rank()));
      kolo::AllreduceOptions options{kolo::ReduceOp::Sum};
      options.process_set = set;
      handles.push_back(kolo::allreduce_async("static", kolo::view(values.back()), options));
    }
    kolo_scenarios::wait_all_ok(peer, handles, "static sets");
    std::size_t k = 0;
    for (int id = 1; id <= 3; ++id) {
      const kolo::ProcessSet set(id);
      if (!set.included()) continue;
      float want = 0;
      for (int r : set.ranks()) want += static_cast<float>(r);
      PEER_CHECK(peer, values[k][0] == want, "static set " << id << ": " << values[k][0]);
      ++k;
    }
    // Without KOLO_DYNAMIC_PROCESS_SETS, sets cannot be added while kolo runs.
    try {
      kolo::add_process_set({0});
      PEER_CHECK(peer, false, "add_process_set() worked without KOLO_DYNAMIC_PROCESS_SETS");
    } catch (const kolo::Error& e) {
      PEER_CHECK(peer, contains(e.what(), "KOLO_DYNAMIC_PROCESS_SETS=1"), e.what());
    }
  }) > 0);
}

namespace {

// Three ranks, process set 1 = ranks {1, 2}, short stall times (simulated).
JobOptions stall_job_options() {
  JobOptions options;
  options.size = 3;
  options.config = kolo_inprocess::scenario_config();
  options.config.stall_check_seconds = 2;
  options.config.stall_shutdown_seconds = 5;
  options.process_sets = {{1, 2}};
  return options;
}

// On set 1's ranks: an operation on the set fails at once, as kolo has shut down there.
void expect_set_stopped(kolo_scenarios::Peer& peer, const std::string& reason) {
  if (peer.rank() == 0) return;
  std::vector<float> v(3, 1.0f);
  kolo::AllreduceOptions in_set{kolo::ReduceOp::Sum};
  in_set.process_set = kolo::ProcessSet(1);
  const kolo::Status later = peer.wait(kolo::allreduce_async("set/after", kolo::view(v), in_set));
  PEER_CHECK(peer, later.code() == kolo::StatusCode::Stalled && contains(later.message(), reason), describe(later));
}

}  // namespace

// The stall shuts kolo down in that set only: the set's later operations fail at once,
// the global set's run on.
TEST_CASE("in-process: a stalled tensor of a process set fails naming the set and its rank",
          "[inprocess][process_sets]") {
  Job job(stall_job_options());
  CHECK(job.run([](kolo_scenarios::Peer& peer) {
    std::vector<float> v(3, 1.0f);
    kolo::AllreduceOptions in_set{kolo::ReduceOp::Sum};
    in_set.process_set = kolo::ProcessSet(1);
    if (peer.rank() == 1) {  // rank 2 never submits
      const kolo::Status s = peer.wait(kolo::allreduce_async("stalled", kolo::view(v), in_set));
      PEER_CHECK(peer, s.code() == kolo::StatusCode::Stalled && contains(s.message(), "in process set 1 (ranks 1, 2)") &&
                           contains(s.message(), "not submitted by rank(s) 2"),
                 describe(s));
    }
    peer.sync();
    expect_set_stopped(peer, "kolo has shut down in this process set after a stall: tensor 'stalled' in process set 1 "
                             "(ranks 1, 2)");
    // kolo itself runs on: an elastic run() would not reset for this error.
    PEER_CHECK(peer, !kolo::elastic::stopped_by_other_ranks(), "a process set's stall stopped the global set");
    std::fill(v.begin(), v.end(), 1.0f);
    const kolo::Status global = peer.wait(kolo::allreduce_async("global", kolo::view(v), {kolo::ReduceOp::Sum}));
    PEER_CHECK(peer, global.ok() && v == std::vector<float>(3, 3.0f), describe(global) << ", [0] = " << v[0]);
  }) > 0);
}

// A stall of the global set shuts kolo down on every rank, its process sets included: a
// set's later operation fails at once, saying so.
TEST_CASE("in-process: a stall of the global set stops the process sets too", "[inprocess][process_sets]") {
  Job job(stall_job_options());
  CHECK(job.run([](kolo_scenarios::Peer& peer) {
    std::vector<float> v(3, 1.0f);
    if (peer.rank() != 0) {  // the set works before
      kolo::AllreduceOptions in_set{kolo::ReduceOp::Sum};
      in_set.process_set = kolo::ProcessSet(1);
      const kolo::Status before = peer.wait(kolo::allreduce_async("set/before", kolo::view(v), in_set));
      PEER_CHECK(peer, before.ok(), describe(before));
    }
    PEER_CHECK(peer, !kolo::elastic::stopped_by_other_ranks(), "stopped_by_other_ranks() before any stall");
    if (peer.rank() != 2) {  // rank 2 never submits
      const kolo::Status s = peer.wait(kolo::allreduce_async("global/stalled", kolo::view(v), {kolo::ReduceOp::Sum}));
      PEER_CHECK(peer, s.code() == kolo::StatusCode::Stalled && contains(s.message(), "not submitted by rank(s) 2"),
                 describe(s));
    }
    peer.sync();
    expect_set_stopped(peer, "kolo has shut down on every rank after a stall of the global set");
    // Also on rank 2, whose background thread may still be in the stall's cycle: the
    // operation fails once it is out.
    const kolo::Status global = peer.wait(kolo::allreduce_async("global/after", kolo::view(v), {kolo::ReduceOp::Sum}));
    PEER_CHECK(peer, global.code() == kolo::StatusCode::Stalled, describe(global));
    PEER_CHECK(peer, kolo::elastic::stopped_by_other_ranks(), "stopped_by_other_ranks() after the global set's stall");
  }) > 0);
}

TEST_CASE("static process set lists are checked: each entry named by its place", "[inprocess][process_sets]") {
  using Catch::Matchers::Contains;
  CHECK(kolo::checked_process_sets({{3, 1}, {2}}, 4) == std::vector<std::vector<int>>{{1, 3}, {2}});
  CHECK_THROWS_WITH(kolo::checked_process_sets({{0, 1}, {2}, {1, 0}}, 4),
                    Contains("entry 3, [1, 0], is listed twice (also entry 1)"));
  CHECK_THROWS_WITH(kolo::checked_process_sets({{2, 0, 1, 3}}, 4), Contains("entry 1, [2, 0, 1, 3], is the global set"));
  CHECK_THROWS_WITH(kolo::checked_process_sets({{0}, {4}}, 4), Contains("entry 2, [4], names a rank outside the job"));
  CHECK_THROWS_WITH(kolo::checked_process_sets({{1, 1}}, 4), Contains("names a rank twice"));
  CHECK_THROWS_WITH(kolo::checked_process_sets({{}}, 4), Contains("has no ranks"));
}

TEST_CASE("in-process: a rank of a process set that hangs fails the set's operations naming the set",
          "[inprocess][process_sets]") {
  JobOptions options;
  options.size = 3;
  options.config = kolo_inprocess::scenario_config();
  options.config.control_timeout_seconds = 5;
  options.process_sets = {{1, 2}};
  Job job(options);
  CHECK(job.run([](kolo_scenarios::Peer& peer) {
    if (peer.rank() == 0) return;
    if (peer.rank() == 2) {
      peer.stop_taking_part();
      return;
    }
    std::vector<float> v(3, 1.0f);
    kolo::AllreduceOptions in_set{kolo::ReduceOp::Sum};
    in_set.process_set = kolo::ProcessSet(1);
    const kolo::Status s = peer.wait(kolo::allreduce_async("hung", kolo::view(v), in_set), std::chrono::seconds(40));
    PEER_CHECK(peer, s.code() == kolo::StatusCode::CommFailure && contains(s.message(), "in process set 1 (ranks 1, 2)") &&
                         contains(s.message(), "'hung'"),
               describe(s));
  }) > 0);
}

// kolo::shutdown() on the program's thread and the removal of a process set on the global
// set's background thread may shut one runtime down at once: one joins its thread, the
// other waits (two joins of one std::thread are undefined; TSan runs this in CI).
TEST_CASE("a runtime shut down from two threads at once is joined once", "[inprocess][process_sets]") {
  const kolo::Clock& clock = kolo::steady_clock();
  for (int round = 0; round < 20; ++round) {
    kolo::InProcessWorld world(1, clock);
    kolo::Timeline timeline;
    kolo::Runtime runtime(world.transport(0), kolo_inprocess::scenario_config(), clock, timeline);
    std::thread other([&] { runtime.shutdown(); });
    runtime.shutdown();
    other.join();
    CHECK_FALSE(runtime.failed());  // an agreed shutdown, not a failure
  }
}

// Making a process set splits communicators, blocking in MPI with no bound of its own: a
// rank that hangs there (here: at its next subset(), after the change was negotiated)
// must end the job through the watchdog, as it would in a collective, within the data
// timeout and a roll call, long before the transport's own timeout.
TEST_CASE("in-process: a rank that hangs while a process set is made ends the job within the data timeout",
          "[inprocess][process_sets]") {
  JobOptions options = dynamic_sets(3);
  options.config.data_timeout_seconds = 5;
  options.config.control_timeout_seconds = 40;
  Job job(options);
  job.world().stop_taking_part_at(2, kolo::InProcessCall::Subset);
  job.run([&](kolo_scenarios::Peer& peer) {
    const double start = peer.seconds();
    std::string error;
    peer.blocking([&] {
      try {
        kolo::add_process_set({0, 2});
      } catch (const kolo::Error& e) {
        error = e.what();
      }
    });
    PEER_CHECK(peer, !error.empty(), "add_process_set() succeeded with rank 2 hung");
    // The watchdog ended the job (data timeout, then a roll call of 2 s), then the transport
    // gave up after its 40 s; before, only the latter.
    PEER_CHECK(peer, job.world().ended_by().has_value(),
               "the job was not ended; after " << peer.seconds() - start << " s: " << error);
  });
  REQUIRE(job.world().ended_by().has_value());
  CHECK(*job.world().ended_by() != 2);
}

// init()'s static sets are made before any runtime, and so any watchdog, runs: a watchdog of
// their own watches the splits.
TEST_CASE("a rank that hangs while init() makes the static process sets ends the job", "[inprocess][process_sets]") {
  kolo::InProcessWorld world(3, kolo::steady_clock(), kolo::InProcessOptions{std::chrono::seconds(8), 0});
  world.stop_taking_part_at(2, kolo::InProcessCall::Subset);
  kolo::Config config = kolo_inprocess::scenario_config();
  config.data_timeout_seconds = 1;
  std::vector<std::thread> ranks;
  std::vector<std::string> errors(3);
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < 3; ++r)
    ranks.emplace_back([&, r] {
      try {
        kolo::ProcessSets sets(world.transport(r), config, kolo::steady_clock(), {{0, 1}, {1, 2}});
      } catch (const kolo::Error& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  for (std::thread& t : ranks) t.join();
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE(world.ended_by().has_value());  // the watchdog, not only the transport's 8 s
  CHECK(*world.ended_by() != 2);
  for (const std::string& e : errors) CHECK_FALSE(e.empty());
  CHECK(took < 20);
}
