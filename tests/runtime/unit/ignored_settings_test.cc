// "No silent no-ops": the lines rank 0 prints at init() for settings kolo accepts but
// will not act on (runtime/ignored_settings.h), one category per test.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "runtime/config.h"
#include "runtime/ignored_settings.h"

namespace {

using Lines = std::vector<std::string>;
constexpr kolo::BuildFacts kWithoutCuda{.has_cuda = false};
constexpr kolo::BuildFacts kWithCuda{.has_cuda = true};

// The warnings for `environment`, with the configuration kolo reads from it.
Lines warnings_for(const kolo::EnvironmentVariables& environment, kolo::BuildFacts build = kWithoutCuda) {
  const kolo::Config config = kolo::config_from_environment([&](const std::string& name) -> std::optional<std::string> {
    for (const auto& [variable, value] : environment)
      if (variable == name) return value;
    return std::nullopt;
  });
  return kolo::ignored_setting_warnings(environment, config, build);
}

}  // namespace

TEST_CASE("a plain environment, with kolo's tool variables and horovodrun's rank variables, gives no warning",
          "[ignored-settings]") {
  CHECK(warnings_for({}).empty());
  CHECK(warnings_for({{"PATH", "/usr/bin"},
                      {"NCCL_DEBUG", "INFO"},
                      {"OMPI_COMM_WORLD_RANK", "0"},
                      {"KOLO_FUSION_THRESHOLD", "1048576"},
                      {"HOROVOD_CYCLE_TIME", "2"},
                      {"KOLO_TOOL_BUILD_DIR", "/work/build"},
                      {"KOLO_TOOL_JOBS", "2"},
                      {"KOLO_MPIRUN", "/tmp/netns/mpirun"},
                      {"KOLO_TOOL_TEST_TIMEOUT", "900"},
                      {"KOLO_TOOL_SKIP_PACKAGES", "1"},
                      {"KOLO_TOOL_A_KNOB_NO_LIST_NAMES", "x"},  // the prefix alone keeps it quiet
                      {"HOROVOD_RANK", "1"},
                      {"HOROVOD_SIZE", "4"},
                      {"HOROVOD_LOCAL_RANK", "1"},
                      {"HOROVOD_HOSTNAME", "node0"},
                      {"HOROVOD_GLOO_RENDEZVOUS_PORT", "1234"},
                      {"HOROVOD_GPU_ALLREDUCE", "NCCL"},
                      {"HOROVOD_WITH_PYTORCH", "1"},
                      {"HOROVOD_WITHOUT_MXNET", "1"},
                      {"HOROVOD_NCCL_HOME", "/usr/local/nccl"}})
            .empty());
}

TEST_CASE("Horovod variables kolo does not implement are named with the reason, under either prefix",
          "[ignored-settings]") {
  CHECK(warnings_for({{"HOROVOD_THREAD_AFFINITY", "1"}}) ==
        Lines{"HOROVOD_THREAD_AFFINITY=1 is ignored: kolo does not pin its background thread to a core"});
  CHECK(warnings_for({{"HOROVOD_NUM_NCCL_STREAMS", "2"}}) ==
        Lines{"HOROVOD_NUM_NCCL_STREAMS=2 is ignored: kolo uses one NCCL stream per device"});
  CHECK(warnings_for({{"KOLO_NUM_NCCL_STREAMS", "4"}}) ==
        Lines{"KOLO_NUM_NCCL_STREAMS=4 is ignored: kolo uses one NCCL stream per device"});
  CHECK(warnings_for({{"HOROVOD_CONTROLLER", "gloo"}, {"HOROVOD_CPU_OPERATIONS", "gloo"}}) ==
        Lines{"HOROVOD_CONTROLLER=gloo is ignored: kolo negotiates over the job's transport: Gloo under kolorun "
              "--gloo, else MPI",
              "HOROVOD_CPU_OPERATIONS=gloo is ignored: kolo runs the collectives of CPU tensors on the job's "
              "transport: Gloo under kolorun --gloo, else MPI"});
  CHECK(warnings_for({{"HOROVOD_AUTOTUNE_WARMUP_SAMPLES", "5"}}) ==
        Lines{"HOROVOD_AUTOTUNE_WARMUP_SAMPLES=5 is ignored: kolo's autotuner is a plain grid search "
              "(no warm-up samples, no Bayesian optimisation)"});
  // Read by gloo_job.h (kolorun sets them for an elastic job's workers).
  CHECK(warnings_for({{"HOROVOD_ELASTIC", "1"}, {"KOLO_ELASTIC", "1"}, {"HOROVOD_ELASTIC_TIMEOUT", "60"}}).empty());
}

TEST_CASE("Horovod variables kolo does implement are not warned about", "[ignored-settings]") {
  CHECK(warnings_for({{"HOROVOD_HIERARCHICAL_ALLGATHER", "1"}}).empty());
  CHECK(warnings_for({{"HOROVOD_HIERARCHICAL_ALLREDUCE", "1"}}).empty());
  CHECK(warnings_for({{"HOROVOD_TIMELINE", "t.json"}, {"HOROVOD_TIMELINE_MARK_CYCLES", "1"}}).empty());
  CHECK(warnings_for({{"HOROVOD_STALL_CHECK_TIME_SECONDS", "30"}, {"HOROVOD_LOG_LEVEL", "info"}}).empty());
}

TEST_CASE("an unknown KOLO_ or HOROVOD_ name is ignored, with the nearest real name when one is close",
          "[ignored-settings]") {
  CHECK(warnings_for({{"KOLO_FUSION_TRESHOLD", "1024"}}) ==
        Lines{"KOLO_FUSION_TRESHOLD=1024 is ignored: kolo has no such setting (did you mean KOLO_FUSION_THRESHOLD?)"});
  CHECK(warnings_for({{"HOROVOD_CYCLE_TIMES", "3"}}) ==
        Lines{"HOROVOD_CYCLE_TIMES=3 is ignored: kolo has no such setting (did you mean HOROVOD_CYCLE_TIME?)"});
  CHECK(warnings_for({{"KOLO_BANANA", "yes"}}) ==
        Lines{"KOLO_BANANA=yes is ignored: kolo has no such setting (misspelled?)"});
  // The tools' knobs carry KOLO_TOOL_; the runtime keeps no list of them, so a tool name
  // without the prefix is an unknown setting like any other.
  const Lines jobs = warnings_for({{"KOLO_JOBS", "2"}});
  REQUIRE(jobs.size() == 1);
  CHECK(jobs[0].starts_with("KOLO_JOBS=2 is ignored: kolo has no such setting"));
}

TEST_CASE("GPU_OPERATIONS is ignored, and said so, only in a build without CUDA", "[ignored-settings]") {
  CHECK(warnings_for({{"KOLO_GPU_OPERATIONS", "MPI"}}, kWithoutCuda) ==
        Lines{"KOLO_GPU_OPERATIONS=MPI is ignored: this build of kolo has no CUDA, so it has no GPU tensors "
              "to run collectives on"});
  CHECK(warnings_for({{"KOLO_GPU_OPERATIONS", "MPI"}}, kWithCuda).empty());
  // The host stand-in for the GPU path takes the setting without CUDA.
  CHECK(warnings_for({{"KOLO_GPU_OPERATIONS", "NCCL"}, {"KOLO_TEST_HOST_GPU", "1"}}, kWithoutCuda).empty());
}

TEST_CASE("settings that another setting makes pointless are named with the one that does", "[ignored-settings]") {
  CHECK(warnings_for({{"KOLO_AUTOTUNE_LOG", "/tmp/a.csv"}}) ==
        Lines{"KOLO_AUTOTUNE_LOG=/tmp/a.csv is ignored: autotuning is off (set KOLO_AUTOTUNE=1)"});
  CHECK(warnings_for({{"KOLO_AUTOTUNE", "1"}, {"KOLO_AUTOTUNE_LOG", "/tmp/a.csv"}}).empty());

  CHECK(warnings_for({{"HOROVOD_AUTOTUNE", "1"}, {"KOLO_FUSION_THRESHOLD", "0"}, {"KOLO_CYCLE_TIME", "2"}}) ==
        Lines{"KOLO_FUSION_THRESHOLD=0 is ignored: HOROVOD_AUTOTUNE=1 searches the fusion threshold and the "
              "allreduce piece size itself"});

  CHECK(warnings_for({{"KOLO_STALL_CHECK_DISABLE", "1"},
                      {"KOLO_STALL_CHECK_TIME_SECONDS", "5"},
                      {"HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", "50"}}) ==
        Lines{"HOROVOD_STALL_SHUTDOWN_TIME_SECONDS=50 is ignored: the stall check is off (KOLO_STALL_CHECK_DISABLE=1)",
              "KOLO_STALL_CHECK_TIME_SECONDS=5 is ignored: the stall check is off (KOLO_STALL_CHECK_DISABLE=1)"});
  CHECK(warnings_for({{"KOLO_STALL_CHECK_DISABLE", "0"}, {"KOLO_STALL_CHECK_TIME_SECONDS", "5"}}).empty());

  CHECK(warnings_for({{"KOLO_STALL_CHECK_TIME_SECONDS", "30"}, {"KOLO_STALL_SHUTDOWN_TIME_SECONDS", "20"}}) ==
        Lines{"KOLO_STALL_CHECK_TIME_SECONDS=30 is ignored: a stalled tensor fails after 20 s "
              "(KOLO_STALL_SHUTDOWN_TIME_SECONDS), before any warning is due"});
  CHECK(warnings_for({{"KOLO_STALL_CHECK_TIME_SECONDS", "30"}, {"KOLO_STALL_SHUTDOWN_TIME_SECONDS", "0"}}).empty());

  CHECK(warnings_for({{"KOLO_TIMELINE_MARK_CYCLES", "1"}}) ==
        Lines{"KOLO_TIMELINE_MARK_CYCLES=1 is ignored: there is no timeline to mark (KOLO_TIMELINE is not set)"});
  CHECK(warnings_for({{"KOLO_TIMELINE_MARK_CYCLES", "0"}}).empty());
}

TEST_CASE("a HOROVOD_ variable that its KOLO_ name overrides with another value is named", "[ignored-settings]") {
  CHECK(warnings_for({{"KOLO_CYCLE_TIME", "2"}, {"HOROVOD_CYCLE_TIME", "5"}}) ==
        Lines{"HOROVOD_CYCLE_TIME=5 is ignored: KOLO_CYCLE_TIME=2 is set too, and KOLO_ wins"});
  CHECK(warnings_for({{"KOLO_CYCLE_TIME", "2"}, {"HOROVOD_CYCLE_TIME", "2"}}).empty());
}

TEST_CASE("the warnings come sorted by variable, one line each", "[ignored-settings]") {
  CHECK(warnings_for({{"KOLO_ZZZ", "1"}, {"HOROVOD_THREAD_AFFINITY", "0"}, {"KOLO_AAA", "1"}}) ==
        Lines{"HOROVOD_THREAD_AFFINITY=0 is ignored: kolo does not pin its background thread to a core",
              "KOLO_AAA=1 is ignored: kolo has no such setting (misspelled?)",
              "KOLO_ZZZ=1 is ignored: kolo has no such setting (misspelled?)"});
}

TEST_CASE("a shared setting another rank had set otherwise is named once, with its ranks", "[ignored-settings]") {
  kolo::Config rank_0;
  rank_0.fusion_threshold_bytes = 2048;
  kolo::Config fusion_off = rank_0, five_slots = rank_0;
  fusion_off.fusion_threshold_bytes = 0;
  five_slots.cache_capacity = 5;
  const std::string in_effect = rank_0.describe();
  const kolo::EnvironmentVariables set_both = {{"KOLO_FUSION_THRESHOLD", "0"}, {"HOROVOD_CACHE_CAPACITY", "5"}};
  const auto overridden = [&](const kolo::Config& own) {
    return kolo::overridden_lines(own.describe(), in_effect, set_both);
  };

  CHECK(overridden(rank_0).empty());
  CHECK(overridden(fusion_off) == "KOLO_FUSION_THRESHOLD = 0\n");
  // A rank whose environment does not set it had the default, which rank 0's value replaces
  // as intended (mpirun without -x KOLO_FUSION_THRESHOLD): no news.
  CHECK(kolo::overridden_lines(fusion_off.describe(), in_effect, {{"KOLO_CYCLE_TIME", "2"}}).empty());

  const std::vector<std::string> by_rank = {"", overridden(fusion_off), overridden(fusion_off), overridden(fusion_off),
                                            "", overridden(five_slots), overridden(fusion_off)};
  CHECK(kolo::overridden_setting_warnings(in_effect, by_rank) ==
        Lines{"KOLO_CACHE_CAPACITY = 5 on rank 5 is ignored: rank 0's value, 1024, applies to every rank",
              "KOLO_FUSION_THRESHOLD = 0 on ranks 1-3, 6 is ignored: rank 0's value, 2048, applies to every rank"});
  CHECK(kolo::overridden_setting_warnings(in_effect, {"", "", ""}).empty());
}
