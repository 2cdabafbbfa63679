// The runtime's settings, read once from the environment at init(). Every variable is
// KOLO_<NAME>, also accepted as HOROVOD_<NAME> (KOLO_ wins when both are set). A value
// that does not parse is an error naming the variable, never silently ignored.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace kolo {

enum class LogLevel : int { Trace, Debug, Info, Warning, Error, Fatal };

struct Config {
  int64_t fusion_threshold_bytes = 64 * 1024 * 1024;  // 0 disables fusion
  double cycle_time_ms = 1.0;
  int cache_capacity = 1024;                          // 0 disables the response cache
  std::string timeline_path;                          // empty: no timeline
  double stall_check_seconds = 60.0;
  bool stall_check_enabled = true;
  double stall_shutdown_seconds = 0.0;                // 0: never fail stalled tensors
  LogLevel log_level = LogLevel::Warning;
  int64_t allreduce_chunk_bytes = 0;                  // 0: 256 KiB per rank
  double control_timeout_seconds = 300.0;
  bool autotune = false;
  std::string autotune_log;

  std::string describe() const;  // one "KOLO_X = value" line per setting
};

// Looks up an environment variable; injectable for tests.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
EnvLookup process_environment();

// Throws kolo::Error(InvalidArgument) naming the variable on a bad value.
Config config_from_environment(const EnvLookup& env = process_environment());

LogLevel parse_log_level(const std::string& text);  // throws on unknown names
const char* log_level_name(LogLevel level);

}  // namespace kolo
