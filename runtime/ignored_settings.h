// The rule "no silent no-ops": a KOLO_* or HOROVOD_* variable that kolo accepts either
// takes effect, or rank 0 says once, at init(), that it is ignored and why
// (docs/configuration.md, "Settings kolo ignores"). These functions only compute the
// lines; settings_report.cc gathers what they need and prints them.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "config.h"

namespace kolo {

// A process environment as (name, value) pairs, in any order.
using EnvironmentVariables = std::vector<std::pair<std::string, std::string>>;

struct BuildFacts {
  bool has_cuda = false;  // GPU tensors exist only in a build with CUDA (or KOLO_TEST_HOST_GPU)
};

// One line per variable in `environment` that kolo will not act on, sorted by name, e.g.
//   HOROVOD_THREAD_AFFINITY=1 is ignored: kolo does not pin its background thread to a core
// `config` is the configuration in effect (rank 0's shared settings applied). Covers
// Horovod variables kolo does not implement, unknown names, and settings that other
// settings or the build make pointless in this run.
std::vector<std::string> ignored_setting_warnings(const EnvironmentVariables& environment,
                                                  const Config& config, const BuildFacts& build);

// The lines of `own` (a Config::describe()) that `in_effect` does not have, for the
// settings `environment` sets: this rank's values of the shared settings that rank 0's
// replaced. A default replaced is no news: it is how rank 0's value reaches ranks that
// were not given the variable (mpirun without -x, say).
std::string overridden_lines(const std::string& own, const std::string& in_effect,
                             const EnvironmentVariables& environment);

// For rank 0: one line per shared setting and value that some other rank had set
// differently, e.g.
//   KOLO_FUSION_THRESHOLD = 0 on ranks 1-3 is ignored: rank 0's value, 2048, applies to every rank
// `overridden_by_rank[r]` is rank r's overridden_lines().
std::vector<std::string> overridden_setting_warnings(const std::string& in_effect,
                                                     const std::vector<std::string>& overridden_by_rank);

}  // namespace kolo
