#include "settings_record.h"

#include <cerrno>
#include <cstdlib>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

#include "kolo/check.h"

namespace kolo {
namespace {

// One shared setting: its record key (the variable that sets it) and how it reads and
// writes a Config, as an integer.
struct SharedSetting {
  const char* key;
  int64_t (*get)(const Config&);
  void (*set)(Config&, int64_t);
  // The values this rank's own parser accepts (config.cc): a record is another rank's
  // bytes, and a value beyond these (a cache of 2^31 slots, say) would be taken as it is.
  int64_t lowest = 0;
  int64_t highest = 1;
};

constexpr int64_t kNoLimit = std::numeric_limits<int64_t>::max();

constexpr SharedSetting kShared[] = {
    {"KOLO_FUSION_THRESHOLD", [](const Config& c) -> int64_t { return c.fusion_threshold_bytes; },
     [](Config& c, int64_t v) { c.fusion_threshold_bytes = v; }, 0, kNoLimit},
    {"KOLO_CACHE_CAPACITY", [](const Config& c) -> int64_t { return c.cache_capacity; },
     [](Config& c, int64_t v) { c.cache_capacity = static_cast<int>(v); }, 0, kMaxCacheCapacity},
    {"KOLO_ALLREDUCE_CHUNK_BYTES", [](const Config& c) -> int64_t { return c.allreduce_chunk_bytes; },
     [](Config& c, int64_t v) { c.allreduce_chunk_bytes = v; }, 0, kNoLimit},
    {"KOLO_AUTOTUNE", [](const Config& c) -> int64_t { return c.autotune; },
     [](Config& c, int64_t v) { c.autotune = v != 0; }},
    {"KOLO_GPU_OPERATIONS", [](const Config& c) -> int64_t { return static_cast<int64_t>(c.gpu_operations); },
     [](Config& c, int64_t v) { c.gpu_operations = static_cast<GpuOperationsSetting>(v); },
     static_cast<int64_t>(GpuOperationsSetting::Auto), static_cast<int64_t>(GpuOperationsSetting::Mpi)},
    {"KOLO_HIERARCHICAL_ALLREDUCE", [](const Config& c) -> int64_t { return c.hierarchical_allreduce; },
     [](Config& c, int64_t v) { c.hierarchical_allreduce = v != 0; }},
    {"KOLO_HIERARCHICAL_ALLGATHER", [](const Config& c) -> int64_t { return c.hierarchical_allgather; },
     [](Config& c, int64_t v) { c.hierarchical_allgather = v != 0; }},
    {"KOLO_DYNAMIC_PROCESS_SETS", [](const Config& c) -> int64_t { return c.dynamic_process_sets; },
     [](Config& c, int64_t v) { c.dynamic_process_sets = v != 0; }},
    {"KOLO_TEST_HOST_GPU", [](const Config& c) -> int64_t { return c.test_host_gpu; },
     [](Config& c, int64_t v) { c.test_host_gpu = v != 0; }},
};

[[noreturn]] void unreadable(const std::string& why) {
  throw Error(StatusCode::Unsupported, "kolo: cannot read rank 0's settings record (this rank reads " +
                                           std::string(kSettingsRecordName) + "): " + why);
}

const SharedSetting* find(const std::string& key) {
  for (const SharedSetting& s : kShared)
    if (key == s.key) return &s;
  return nullptr;
}

int64_t parse_value(const std::string& key, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || end != text.c_str() + text.size() || errno != 0)
    unreadable("the value of " + key + " is '" + text + "', not an integer");
  return value;
}

}  // namespace

std::string settings_record(const Config& config) {
  std::string record = kSettingsRecordName;
  record += '\n';
  for (const SharedSetting& s : kShared) record += std::string(s.key) + "=" + std::to_string(s.get(config)) + "\n";
  return record;
}

void apply_settings_record(const std::string& record, Config& config) {
  std::istringstream lines(record);
  std::string line;
  std::getline(lines, line);
  if (line != kSettingsRecordName) unreadable("it is named '" + line + "'");
  Config read = config;
  std::set<std::string> seen;
  while (std::getline(lines, line)) {
    const std::size_t equals = line.find('=');
    const std::string key = line.substr(0, equals);
    const SharedSetting* setting = find(key);
    if (equals == std::string::npos || setting == nullptr) unreadable("unknown setting '" + key + "'");
    if (!seen.insert(key).second) unreadable(key + " appears twice");
    const int64_t value = parse_value(key, line.substr(equals + 1));
    if (value < setting->lowest || value > setting->highest)
      unreadable(key + " is " + std::to_string(value) + ", outside " + std::to_string(setting->lowest) + " to " +
                 std::to_string(setting->highest));
    setting->set(read, value);
  }
  for (const SharedSetting& s : kShared)
    if (!seen.count(s.key)) unreadable(std::string(s.key) + " is missing");
  config = read;
}

void agree_on_settings(Config& config, ops::ControlChannel& control) {
  std::string record = control.rank() == 0 ? settings_record(config) : std::string();
  control.broadcast(record, 0);
  std::optional<Error> failure;
  try {
    apply_settings_record(record, config);
  } catch (const Error& e) {
    failure = e;
  }
  // Every rank learns whether every rank could read it: nobody goes on to wait for a rank
  // that has given up.
  uint64_t all_read = failure ? 0 : 1;
  control.allreduce_and({&all_read, 1});
  if (failure) throw *failure;
  KOLO_CHECK(all_read != 0, StatusCode::Unsupported,
             "kolo: another rank cannot read rank 0's settings record (see its message): do all ranks run the "
             "same build of kolo?");
}

}  // namespace kolo
