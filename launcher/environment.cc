#include "environment.h"

#include <algorithm>
#include <charconv>
#include <cmath>

extern char** environ;

namespace kolo::launcher {
namespace {

// Shortest plain decimal that reads back as the same double: 20 -> "20", 0.5 -> "0.5".
std::string number_text(double value) {
  char text[400];
  const auto result = std::to_chars(text, text + sizeof(text), value, std::chars_format::fixed);
  return std::string(text, result.ptr);
}

std::string_view name_of(std::string_view entry) { return entry.substr(0, entry.find('=')); }

}  // namespace

std::vector<EnvVar> variables_from_flags(const LaunchOptions& o) {
  std::vector<EnvVar> vars;
  if (o.fusion_threshold_mb) {
    const auto bytes = static_cast<long long>(std::llround(*o.fusion_threshold_mb * 1024 * 1024));
    vars.push_back({"KOLO_FUSION_THRESHOLD", std::to_string(bytes)});
  }
  if (o.cycle_time_ms) vars.push_back({"KOLO_CYCLE_TIME", number_text(*o.cycle_time_ms)});
  if (o.cache_capacity) vars.push_back({"KOLO_CACHE_CAPACITY", std::to_string(*o.cache_capacity)});
  if (o.disable_cache) vars.push_back({"KOLO_CACHE_CAPACITY", "0"});
  if (!o.timeline_filename.empty()) vars.push_back({"KOLO_TIMELINE", o.timeline_filename});
  if (o.timeline_mark_cycles) vars.push_back({"KOLO_TIMELINE_MARK_CYCLES", "1"});
  if (o.hierarchical_allreduce) vars.push_back({"KOLO_HIERARCHICAL_ALLREDUCE", "1"});
  if (o.hierarchical_allgather) vars.push_back({"KOLO_HIERARCHICAL_ALLGATHER", "1"});
  if (!o.log_level.empty()) vars.push_back({"KOLO_LOG_LEVEL", o.log_level});
  if (o.autotune) vars.push_back({"KOLO_AUTOTUNE", "1"});
  if (!o.autotune_log_file.empty()) vars.push_back({"KOLO_AUTOTUNE_LOG", o.autotune_log_file});
  if (o.no_stall_check) vars.push_back({"KOLO_STALL_CHECK_DISABLE", "1"});
  if (o.stall_check_warning_seconds)
    vars.push_back({"KOLO_STALL_CHECK_TIME_SECONDS", number_text(*o.stall_check_warning_seconds)});
  if (o.stall_check_shutdown_seconds)
    vars.push_back(
        {"KOLO_STALL_SHUTDOWN_TIME_SECONDS", number_text(*o.stall_check_shutdown_seconds)});
  // As horovodrun: NCCL's sockets go where MPI's do (names only; NCCL takes no subnets).
  if (!o.network_interface.empty() && o.network_interface.find('/') == std::string::npos)
    vars.push_back({"NCCL_SOCKET_IFNAME", o.network_interface});
  return vars;
}

bool is_forwarded_variable(std::string_view name) {
  for (std::string_view prefix : {"KOLO_", "HOROVOD_", "NCCL_"})
    if (name.size() > prefix.size() && name.substr(0, prefix.size()) == prefix) return true;
  return false;
}

Environment current_environment() {
  Environment env;
  for (char** entry = environ; *entry != nullptr; ++entry) env.emplace_back(*entry);
  return env;
}

std::optional<std::string> find_variable(const Environment& env, std::string_view name) {
  for (const std::string& entry : env)
    if (name_of(entry) == name && entry.size() > name.size())
      return entry.substr(name.size() + 1);
  return std::nullopt;
}

std::vector<std::string> forwarded_variable_names(const Environment& env,
                                                  const std::vector<EnvVar>& except) {
  std::vector<std::string> names;
  for (const std::string& entry : env) {
    const std::string name(name_of(entry));
    const bool overridden = std::any_of(except.begin(), except.end(),
                                        [&](const EnvVar& var) { return var.name == name; });
    if (is_forwarded_variable(name) && !overridden) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

Environment apply_changes(Environment env, const std::vector<std::string>& unset,
                          const std::vector<EnvVar>& set) {
  auto remove = [&env](std::string_view name) {
    std::erase_if(env, [name](const std::string& entry) { return name_of(entry) == name; });
  };
  for (const std::string& name : unset) remove(name);
  for (const EnvVar& var : set) {
    remove(var.name);
    env.push_back(var.name + "=" + var.value);
  }
  return env;
}

}  // namespace kolo::launcher
