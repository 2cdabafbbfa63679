#include "config.h"

#include <cctype>
#include <cstdlib>
#include <sstream>

#include "kolo/kolo.h"

namespace kolo {
namespace {

// Reads KOLO_<name>, else HOROVOD_<name>; returns the variable actually used too.
std::optional<std::pair<std::string, std::string>> lookup(const EnvLookup& env,
                                                          const std::string& name) {
  for (const char* prefix : {"KOLO_", "HOROVOD_"}) {
    const std::string variable = prefix + name;
    if (auto value = env(variable)) return std::make_pair(variable, *value);
  }
  return std::nullopt;
}

[[noreturn]] void reject(const std::string& variable, const std::string& value,
                         const std::string& expected) {
  throw Error(StatusCode::InvalidArgument,
              "kolo: bad value " + variable + "='" + value + "': expected " + expected);
}

// The longest time setting the runtime turns into a clock duration (nanoseconds in 64
// bits, added to the clock's now): about 31 years, far from overflowing either.
constexpr double kMaxWaitSeconds = 1e9;

double parse_number(const std::string& variable, const std::string& value, double min, double max,
                    const std::string& expected) {
  char* end = nullptr;
  const double number = std::strtod(value.c_str(), &end);
  if (value.empty() || end != value.c_str() + value.size() || !(number >= min) || !(number <= max))
    reject(variable, value, expected);
  return number;
}

int64_t parse_integer(const std::string& variable, const std::string& value, int64_t min,
                      const std::string& expected) {
  char* end = nullptr;
  errno = 0;
  const long long number = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || end != value.c_str() + value.size() || errno != 0 || number < min)
    reject(variable, value, expected);
  return number;
}

bool parse_bool(const std::string& variable, const std::string& value) {
  if (value == "1" || value == "true" || value == "TRUE" || value == "yes" || value == "on") return true;
  if (value == "0" || value == "false" || value == "FALSE" || value == "no" || value == "off") return false;
  reject(variable, value, "1 or 0 (true/false)");
}

}  // namespace

EnvLookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

LogLevel parse_log_level(const std::string& text) {
  std::string lower;
  for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "trace") return LogLevel::Trace;
  if (lower == "debug") return LogLevel::Debug;
  if (lower == "info") return LogLevel::Info;
  if (lower == "warning" || lower == "warn") return LogLevel::Warning;
  if (lower == "error") return LogLevel::Error;
  if (lower == "fatal") return LogLevel::Fatal;
  throw Error(StatusCode::InvalidArgument, "unknown log level '" + text + "'");
}

const char* log_level_name(LogLevel level) {
  static const char* names[] = {"trace", "debug", "info", "warning", "error", "fatal"};
  return names[static_cast<int>(level)];
}

const char* gpu_operations_setting_name(GpuOperationsSetting setting) {
  switch (setting) {
    case GpuOperationsSetting::Nccl: return "NCCL";
    case GpuOperationsSetting::Mpi: return "MPI";
    default: return "(auto)";
  }
}

Config config_from_environment(const EnvLookup& env) {
  Config config;
  if (auto v = lookup(env, "FUSION_THRESHOLD"))
    config.fusion_threshold_bytes =
        parse_integer(v->first, v->second, 0, "a byte count >= 0 (0 disables fusion)");
  const auto cycle_time = lookup(env, "CYCLE_TIME");
  if (cycle_time)
    config.cycle_time_ms = parse_number(cycle_time->first, cycle_time->second, 0, kMaxWaitSeconds * 1e3,
                                        "milliseconds from 0 to 1e12, e.g. 1 or 0.5");
  if (auto v = lookup(env, "CACHE_CAPACITY")) {
    const std::string expected = "a tensor count from 0 (no cache) to 1048576";
    const int64_t capacity = parse_integer(v->first, v->second, 0, expected);
    if (capacity > kMaxCacheCapacity) reject(v->first, v->second, expected);
    config.cache_capacity = static_cast<int>(capacity);
  }
  if (auto v = lookup(env, "TIMELINE")) config.timeline_path = v->second;
  if (auto v = lookup(env, "TIMELINE_MARK_CYCLES"))
    config.timeline_mark_cycles = parse_bool(v->first, v->second);
  if (auto v = lookup(env, "KEEP_FREED_MEMORY")) config.keep_freed_memory = parse_bool(v->first, v->second);
  if (auto v = lookup(env, "STALL_CHECK_TIME_SECONDS"))
    config.stall_check_seconds = parse_number(v->first, v->second, 0, 1e18, "seconds >= 0");
  if (auto v = lookup(env, "STALL_CHECK_DISABLE"))
    config.stall_check_enabled = !parse_bool(v->first, v->second);
  if (auto v = lookup(env, "STALL_SHUTDOWN_TIME_SECONDS"))
    config.stall_shutdown_seconds =
        parse_number(v->first, v->second, 0, 1e18, "seconds >= 0 (0: never)");
  if (auto v = lookup(env, "LOG_LEVEL")) {
    try {
      config.log_level = parse_log_level(v->second);
    } catch (const Error&) {
      reject(v->first, v->second, "one of trace, debug, info, warning, error, fatal");
    }
  }
  if (auto v = lookup(env, "ALLREDUCE_CHUNK_BYTES"))
    config.allreduce_chunk_bytes =
        parse_integer(v->first, v->second, 0, "a byte count >= 0 (0: 1 MiB per rank)");
  if (auto v = lookup(env, "CONTROL_TIMEOUT_SECONDS"))
    config.control_timeout_seconds =
        parse_number(v->first, v->second, 1e-3, kMaxWaitSeconds, "seconds from 0.001 to 1e9");
  if (auto v = lookup(env, "DATA_TIMEOUT_SECONDS"))
    config.data_timeout_seconds = parse_number(v->first, v->second, 0, kMaxWaitSeconds,
                                               "seconds from 0 to 1e9 (0: KOLO_CONTROL_TIMEOUT_SECONDS)");
  if (auto v = lookup(env, "FAILURE_GRACE_SECONDS"))
    config.failure_grace_seconds =
        parse_number(v->first, v->second, 0, kMaxWaitSeconds, "seconds from 0 to 1e9");
  if (auto v = lookup(env, "AUTOTUNE")) config.autotune = parse_bool(v->first, v->second);
  if (auto v = lookup(env, "AUTOTUNE_LOG")) config.autotune_log = v->second;
  if (auto v = lookup(env, "DYNAMIC_PROCESS_SETS")) config.dynamic_process_sets = parse_bool(v->first, v->second);
  if (auto v = lookup(env, "GPU_OPERATIONS")) {
    std::string upper;
    for (char c : v->second) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (upper == "NCCL") config.gpu_operations = GpuOperationsSetting::Nccl;
    else if (upper == "MPI") config.gpu_operations = GpuOperationsSetting::Mpi;
    else reject(v->first, v->second, "NCCL or MPI");
  }
  if (auto v = lookup(env, "HIERARCHICAL_ALLREDUCE"))
    config.hierarchical_allreduce = parse_bool(v->first, v->second);
  if (auto v = lookup(env, "HIERARCHICAL_ALLGATHER"))
    config.hierarchical_allgather = parse_bool(v->first, v->second);
  if (auto v = lookup(env, "TEST_LOCAL_SIZE")) {
    const std::string expected = "a rank count >= 0 that divides the number of ranks (0: MPI's node split)";
    const int64_t local = parse_integer(v->first, v->second, 0, expected);
    if (local > (1 << 20)) reject(v->first, v->second, expected);
    config.test_local_size = static_cast<int>(local);
  }
  if (auto v = lookup(env, "TEST_HOST_GPU")) config.test_host_gpu = parse_bool(v->first, v->second);
  // An idle rank sleeps a cycle time between negotiations, while a rank with work waits for it
  // in the cycle's allreduce, which takes a silence of the control timeout for a dead rank.
  if (cycle_time && config.cycle_time_ms * 4 > config.control_timeout_seconds * 1e3) {
    std::ostringstream expected;
    expected << "at most a quarter of the control timeout (KOLO_CONTROL_TIMEOUT_SECONDS = "
             << config.control_timeout_seconds
             << " s): a rank waits for an idle one's cycle, and a longer wait is taken for a dead rank";
    reject(cycle_time->first, cycle_time->second, expected.str());
  }
  return config;
}

std::string Config::describe() const {
  std::ostringstream out;
  out << "KOLO_FUSION_THRESHOLD = " << fusion_threshold_bytes << "\n"
      << "KOLO_CYCLE_TIME = " << cycle_time_ms << "\n"
      << "KOLO_CACHE_CAPACITY = " << cache_capacity << "\n"
      << "KOLO_TIMELINE = " << timeline_path << "\n"
      << "KOLO_TIMELINE_MARK_CYCLES = " << (timeline_mark_cycles ? 1 : 0) << "\n"
      << "KOLO_KEEP_FREED_MEMORY = " << (keep_freed_memory ? 1 : 0) << "\n"
      << "KOLO_STALL_CHECK_TIME_SECONDS = " << stall_check_seconds
      << (stall_check_enabled ? "" : " (disabled)") << "\n"
      << "KOLO_STALL_SHUTDOWN_TIME_SECONDS = " << stall_shutdown_seconds << "\n"
      << "KOLO_LOG_LEVEL = " << log_level_name(log_level) << "\n"
      << "KOLO_ALLREDUCE_CHUNK_BYTES = " << allreduce_chunk_bytes << "\n"
      << "KOLO_CONTROL_TIMEOUT_SECONDS = " << control_timeout_seconds << "\n"
      << "KOLO_DATA_TIMEOUT_SECONDS = " << data_timeout().count() / 1000.0
      << (data_timeout_seconds > 0 ? "" : " (the control timeout)") << "\n"
      << "KOLO_FAILURE_GRACE_SECONDS = " << failure_grace_seconds << "\n"
      << "KOLO_AUTOTUNE = " << (autotune ? 1 : 0) << "\n"
      << "KOLO_DYNAMIC_PROCESS_SETS = " << (dynamic_process_sets ? 1 : 0) << "\n"
      << "KOLO_GPU_OPERATIONS = " << gpu_operations_setting_name(gpu_operations) << "\n"
      << "KOLO_HIERARCHICAL_ALLREDUCE = " << (hierarchical_allreduce ? 1 : 0) << "\n"
      << "KOLO_HIERARCHICAL_ALLGATHER = " << (hierarchical_allgather ? 1 : 0) << "\n";
  if (test_local_size > 0) out << "KOLO_TEST_LOCAL_SIZE = " << test_local_size << "\n";
  if (test_host_gpu) out << "KOLO_TEST_HOST_GPU = 1\n";
  return out.str();
}

}  // namespace kolo
