#include "ignored_settings.h"

#include <algorithm>
#include <map>
#include <optional>
#include <sstream>
#include <string_view>

#include "closest_name.h"
#include "gloo_job.h"
#include "unimplemented_horovod_settings.h"

namespace kolo {
namespace {

constexpr std::string_view kKolo = "KOLO_";
constexpr std::string_view kHorovod = "HOROVOD_";

// Not settings, so skipped without a word (the Horovod settings kolo does not implement
// are in unimplemented_horovod_settings.h):
// - set by horovodrun (and Horovod's Ray and Spark drivers) for each rank it starts: they
//   describe the launch, and kolo takes the ranks and the node layout from MPI. Under
//   horovodrun --gloo, HOROVOD_CONTROLLER and HOROVOD_CPU_OPERATIONS are set too, and those
//   are warned about;
constexpr std::string_view kSetByHorovodLaunchers[] = {
    "CROSS_RANK", "CROSS_SIZE", "GLOO_RENDEZVOUS_ADDR", "GLOO_RENDEZVOUS_PORT", "HOSTNAME",
    "LOCAL_RANK", "LOCAL_SIZE", "RANK", "SIZE"};
// - Horovod's build options, read by `pip install horovod` and never in a run (Horovod
//   ignores them at run time too; kolo is configured by CMake, KOLO_CUDA and the like);
constexpr std::string_view kHorovodBuildOptions[] = {
    "CMAKE", "CUDA_HOME", "CUDA_INCLUDE", "CUDA_LIB", "DEBUG", "GPU", "GPU_ALLGATHER",
    "GPU_ALLREDUCE", "GPU_ALLTOALL", "GPU_BROADCAST", "GPU_REDUCESCATTER", "MPICXX_SHOW",
    "NCCL_HOME", "NCCL_INCLUDE", "NCCL_LIB", "NCCL_LINK", "ROCM_HOME", "SKIP_COMPILE"};
constexpr std::string_view kHorovodBuildOptionPrefixes[] = {"BUILD_", "WITH_", "WITHOUT_"};
// - KOLO_TOOL_*: the prefix kolo's scripts, tests and CI own (tools/, tests/); a
//   developer's shell exports them and kolorun forwards every KOLO_* variable, so a run
//   meets them. Never a setting: a new tool knob takes the prefix and needs nothing here;
constexpr std::string_view kToolPrefix = "TOOL_";
// - KOLO_MPIRUN: read by kolorun (the mpirun to run, docs/launcher.md), forwarded likewise;
constexpr std::string_view kLauncherVariables[] = {"MPIRUN"};
// - the variables kolorun gives each worker of a Gloo job (gloo_job.h: kGlooJobVariables).

using Environment = std::map<std::string, std::string>;  // sorted by name

// The name after `prefix`, if `variable` has it.
std::optional<std::string_view> name_after(std::string_view variable, std::string_view prefix) {
  if (variable.size() > prefix.size() && variable.starts_with(prefix)) return variable.substr(prefix.size());
  return std::nullopt;
}

std::optional<std::string_view> setting_name(std::string_view variable) {
  if (auto name = name_after(variable, kKolo)) return name;
  return name_after(variable, kHorovod);
}

template <typename Names>
bool listed(const Names& names, std::string_view name) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

bool is_not_a_setting(std::string_view variable) {
  if (auto name = name_after(variable, kKolo))
    return name->starts_with(kToolPrefix) || listed(kLauncherVariables, *name) || listed(kGlooJobVariables, *name);
  const auto name = name_after(variable, kHorovod);
  if (!name) return false;
  return listed(kSetByHorovodLaunchers, *name) || listed(kGlooJobVariables, *name) || listed(kHorovodBuildOptions, *name) ||
         std::any_of(std::begin(kHorovodBuildOptionPrefixes), std::end(kHorovodBuildOptionPrefixes),
                     [&](std::string_view prefix) { return name->starts_with(prefix); });
}

// The variables config_from_environment() reads. It asks for every one of them, whatever
// the answers (config.h), so a lookup that answers none and records the questions lists
// them all, and this list cannot drift from the code that reads them.
std::vector<std::string> variables_kolo_reads() {
  std::vector<std::string> names;
  config_from_environment([&names](const std::string& name) -> std::optional<std::string> {
    names.push_back(name);
    return std::nullopt;
  });
  return names;
}

std::string number_text(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

// Variables kolo reads, set in `env`, that this run has no use for: variable -> why.
std::map<std::string, std::string> settings_without_effect(const Environment& env,
                                                           const std::vector<std::string>& known,
                                                           const Config& config, const BuildFacts& build) {
  // The variable config.cc took a setting from: KOLO_<name> wins over HOROVOD_<name>.
  auto used = [&env](std::string_view name) -> std::optional<std::string> {
    for (std::string_view prefix : {kKolo, kHorovod})
      if (auto it = env.find(std::string(prefix) + std::string(name)); it != env.end()) return it->first;
    return std::nullopt;
  };
  auto assignment = [&](std::string_view name) {
    const auto variable = used(name);
    return variable ? *variable + "=" + env.at(*variable) : std::string(kKolo) + std::string(name);
  };
  std::map<std::string, std::string> ignored;
  auto ignore = [&](std::string_view name, const std::string& why) {
    if (auto variable = used(name)) ignored[*variable] = why;
  };

  for (const std::string& variable : known) {
    const auto name = name_after(variable, kKolo);
    if (!name) continue;
    const auto kolo = env.find(variable), horovod = env.find(std::string(kHorovod) + std::string(*name));
    if (kolo != env.end() && horovod != env.end() && kolo->second != horovod->second)
      ignored[horovod->first] = assignment(*name) + " is set too, and KOLO_ wins";
  }
  if (!build.has_cuda && !config.test_host_gpu)
    ignore("GPU_OPERATIONS", "this build of kolo has no CUDA, so it has no GPU tensors to run collectives on");
  if (!config.autotune) {
    ignore("AUTOTUNE_LOG", "autotuning is off (set KOLO_AUTOTUNE=1)");
  } else {
    const std::string tuned =
        assignment("AUTOTUNE") + " searches the fusion threshold and the allreduce piece size itself";
    ignore("FUSION_THRESHOLD", tuned);
    ignore("ALLREDUCE_CHUNK_BYTES", tuned);
  }
  if (!config.stall_check_enabled) {
    const std::string off = "the stall check is off (" + assignment("STALL_CHECK_DISABLE") + ")";
    ignore("STALL_CHECK_TIME_SECONDS", off);
    ignore("STALL_SHUTDOWN_TIME_SECONDS", off);
  } else if (config.stall_shutdown_seconds > 0 && config.stall_shutdown_seconds <= config.stall_check_seconds) {
    ignore("STALL_CHECK_TIME_SECONDS", "a stalled tensor fails after " +
                                           number_text(config.stall_shutdown_seconds) +
                                           " s (KOLO_STALL_SHUTDOWN_TIME_SECONDS), before any warning is due");
  }
  if (config.timeline_mark_cycles && config.timeline_path.empty())
    ignore("TIMELINE_MARK_CYCLES", "there is no timeline to mark (KOLO_TIMELINE is not set)");
  return ignored;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

// "rank 2", "ranks 1-3, 7".
std::string rank_ranges(const std::vector<int>& ranks) {
  std::ostringstream text;
  text << (ranks.size() == 1 ? "rank " : "ranks ");
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    text << (i > 0 ? ", " : "") << ranks[i];
    if (j > i) text << "-" << ranks[j];
    i = j + 1;
  }
  return text.str();
}

// "KOLO_X = value" -> ("KOLO_X", "value").
std::pair<std::string, std::string> split_description(const std::string& line) {
  const std::size_t at = line.find(" = ");
  if (at == std::string::npos) return {line, ""};
  return {line.substr(0, at), line.substr(at + 3)};
}

}  // namespace

std::vector<std::string> ignored_setting_warnings(const EnvironmentVariables& environment,
                                                  const Config& config, const BuildFacts& build) {
  const Environment env(environment.begin(), environment.end());  // the first of duplicates, as getenv
  const std::vector<std::string> known = variables_kolo_reads();
  std::map<std::string, std::string> ignored;  // variable -> why
  for (const auto& [variable, value] : env) {
    if (!setting_name(variable) || listed(known, variable) || is_not_a_setting(variable)) continue;
    if (const std::string_view why = why_unimplemented(*setting_name(variable)); !why.empty()) {
      ignored[variable] = why;
    } else {
      const std::string near = closest_name(variable, known, 3);
      ignored[variable] =
          "kolo has no such setting (" + (near.empty() ? "misspelled?" : "did you mean " + near + "?") + ")";
    }
  }
  for (auto& [variable, why] : settings_without_effect(env, known, config, build))
    ignored[variable] = std::move(why);

  std::vector<std::string> lines;
  for (const auto& [variable, why] : ignored)
    lines.push_back(variable + "=" + env.at(variable) + " is ignored: " + why);
  return lines;
}

std::string overridden_lines(const std::string& own, const std::string& in_effect,
                             const EnvironmentVariables& environment) {
  auto is_set = [&environment](const std::string& variable) {  // as KOLO_X or HOROVOD_X
    const auto name = name_after(variable, kKolo);
    return name && std::any_of(environment.begin(), environment.end(), [&](const auto& entry) {
             return setting_name(entry.first) == name;
           });
  };
  const std::vector<std::string> effective = lines_of(in_effect);
  std::string overridden;
  for (const std::string& line : lines_of(own))
    if (!listed(effective, line) && is_set(split_description(line).first)) overridden += line + "\n";
  return overridden;
}

std::vector<std::string> overridden_setting_warnings(const std::string& in_effect,
                                                     const std::vector<std::string>& overridden_by_rank) {
  std::map<std::string, std::string> rank_0;  // setting -> the value in effect
  for (const std::string& line : lines_of(in_effect)) rank_0.insert(split_description(line));
  std::map<std::string, std::map<std::string, std::vector<int>>> others;  // setting -> value -> ranks
  for (std::size_t rank = 0; rank < overridden_by_rank.size(); ++rank)
    for (const std::string& line : lines_of(overridden_by_rank[rank])) {
      const auto [setting, value] = split_description(line);
      others[setting][value].push_back(static_cast<int>(rank));
    }
  std::vector<std::string> lines;
  for (const auto& [setting, by_value] : others)
    for (const auto& [value, ranks] : by_value) {
      std::ostringstream line;
      line << setting << " = " << value << " on " << rank_ranges(ranks) << " is ignored: rank 0's value, "
           << rank_0[setting] << ", applies to every rank";
      lines.push_back(line.str());
    }
  return lines;
}

}  // namespace kolo
