// Which environment variables a job's ranks get from kolorun: the KOLO_ variables that
// flags set, and the KOLO_*, HOROVOD_* and NCCL_* variables already in the environment.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "options.h"

namespace kolo::launcher {

struct EnvVar {
  std::string name;
  std::string value;
  bool operator==(const EnvVar&) const = default;
};

// The variables the flags set, in the order of docs/launcher.md's table.
// Units follow runtime/config.cc: KOLO_FUSION_THRESHOLD is bytes (the flag is MiB).
// --network-interface with interface names also sets NCCL_SOCKET_IFNAME.
std::vector<EnvVar> variables_from_flags(const LaunchOptions& options);

// Whether a variable present in kolorun's environment is passed on to every rank.
bool is_forwarded_variable(std::string_view name);

// An environment as NAME=VALUE strings (environ), and lookups in it.
using Environment = std::vector<std::string>;
Environment current_environment();
std::optional<std::string> find_variable(const Environment& env, std::string_view name);

// Names of the forwarded variables in `env`, sorted, without those in `except`.
std::vector<std::string> forwarded_variable_names(const Environment& env,
                                                  const std::vector<EnvVar>& except);

// `env` with `unset` removed and `set` added (replacing any earlier value).
Environment apply_changes(Environment env, const std::vector<std::string>& unset,
                          const std::vector<EnvVar>& set);

}  // namespace kolo::launcher
