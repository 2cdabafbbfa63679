// The runtime's settings, read once from the environment at init(). Every variable is
// KOLO_<NAME>, also accepted as HOROVOD_<NAME> (KOLO_ wins when both are set). A value
// that does not parse is an error naming the variable, never silently ignored.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace kolo {

enum class LogLevel : int { Trace, Debug, Info, Warning, Error, Fatal };
// What runs collectives on GPU tensors: NCCL, or MPI on host copies. Auto: NCCL where
// this build has it.
enum class GpuOperationsSetting : int { Auto, Nccl, Mpi };

// The most response-cache slots KOLO_CACHE_CAPACITY may ask for (a slot is a few hundred bytes).
constexpr int64_t kMaxCacheCapacity = int64_t{1} << 20;

struct Config {
  int64_t fusion_threshold_bytes = 64 * 1024 * 1024;  // 0 disables fusion
  double cycle_time_ms = 1.0;
  int cache_capacity = 1024;                          // 0 disables the response cache
  std::string timeline_path;  // empty: no timeline; "DYNAMIC": none until start_timeline()
  bool timeline_mark_cycles = false;                  // an instant event at each cycle's start
  bool keep_freed_memory = true;                      // heap_tuning.h
  double stall_check_seconds = 60.0;
  bool stall_check_enabled = true;
  // 0: never fail stalled tensors. On by default so that a wait on a tensor some rank
  // never submits ends (every blocking wait has a bound); Horovod leaves it off.
  double stall_shutdown_seconds = 600.0;
  LogLevel log_level = LogLevel::Warning;
  int64_t allreduce_chunk_bytes = 0;                  // 0: 1 MiB per rank
  double control_timeout_seconds = 300.0;
  // How long a collective of the data path may go without completing a piece before the
  // job ends (watchdog.h); 0: the control timeout.
  double data_timeout_seconds = 0.0;
  // After a failure that ends the job, how long the program has to see the error and end
  // before kolo ends the job (watchdog.h).
  double failure_grace_seconds = 5.0;
  bool autotune = false;
  // add_process_set() and remove_process_set() may be called while kolo runs.
  bool dynamic_process_sets = false;
  std::string autotune_log;
  GpuOperationsSetting gpu_operations = GpuOperationsSetting::Auto;
  bool hierarchical_allreduce = false;
  bool hierarchical_allgather = false;
  // Tests only: consecutive groups of this many ranks act as nodes (0: MPI's split).
  int test_local_size = 0;
  // Tests only: "GPU" tensors are host memory, and the GPU path runs with MPI and memcpy
  // standing in for NCCL and CUDA (ops/gpu_path.h).
  bool test_host_gpu = false;

  std::string describe() const;  // one "KOLO_X = value" line per setting
  std::chrono::milliseconds control_timeout() const { return milliseconds(control_timeout_seconds); }
  std::chrono::milliseconds data_timeout() const {
    return data_timeout_seconds > 0 ? milliseconds(data_timeout_seconds) : control_timeout();
  }
  std::chrono::milliseconds failure_grace() const { return milliseconds(failure_grace_seconds); }

  // Seconds as a duration; beyond a million years is as good as never.
  static std::chrono::milliseconds milliseconds(double seconds) {
    return std::chrono::milliseconds(static_cast<int64_t>(std::min(seconds, 3e13) * 1000.0));
  }
  std::chrono::nanoseconds cycle_time() const {
    const std::chrono::duration<double, std::milli> time(cycle_time_ms);
    return std::chrono::duration_cast<std::chrono::nanoseconds>(time);
  }
};

// Looks up an environment variable; injectable for tests.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
EnvLookup process_environment();

// Throws kolo::Error(InvalidArgument) naming the variable on a bad value. Asks `env` for
// every variable it knows (KOLO_<NAME>, then HOROVOD_<NAME>) whatever the answers:
// ignored_settings.cc learns kolo's variable names this way.
Config config_from_environment(const EnvLookup& env = process_environment());

LogLevel parse_log_level(const std::string& text);  // throws on unknown names
const char* gpu_operations_setting_name(GpuOperationsSetting setting);
const char* log_level_name(LogLevel level);

}  // namespace kolo
