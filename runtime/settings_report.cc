#include "settings_report.h"

#include <string>
#include <vector>

#include <unistd.h>

#include "ignored_settings.h"
#include "logging.h"
#include "ops/gpu_path.h"

namespace kolo {
namespace {

EnvironmentVariables process_environment_variables() {
  EnvironmentVariables variables;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    const std::size_t equals = text.find('=');
    if (equals != std::string::npos) variables.emplace_back(text.substr(0, equals), text.substr(equals + 1));
  }
  return variables;
}

}  // namespace

void report_ignored_settings(const Config& own, const Config& in_effect, ops::ControlChannel& control) {
  const EnvironmentVariables environment = process_environment_variables();
  const std::string effective = in_effect.describe();
  const std::vector<std::string> overridden =
      control.gather(overridden_lines(own.describe(), effective, environment), 0);
  if (control.rank() != 0) return;
  const BuildFacts build{.has_cuda = ops::make_cuda_parts() != nullptr};
  std::vector<std::string> lines = ignored_setting_warnings(environment, in_effect, build);
  for (std::string& line : overridden_setting_warnings(effective, overridden)) lines.push_back(std::move(line));
  for (const std::string& line : lines) KOLO_LOG(Warning) << line;
}

}  // namespace kolo
