// The KOLO_* / HOROVOD_* settings (runtime/config.cc), read at init() from the process
// environment: here an environment built from the input, one variable per line. A line
// "NAME=value" sets NAME (any name, known or not); any other line sets one of the
// variables kolo reads, chosen by its first byte, to the rest of the line. A Config or a
// kolo::Error, then what init() does with a Config: the durations the runtime waits for,
// the description it logs, the warnings about ignored settings, and the settings record
// every rank must be able to read back.
#include <map>

#include "fuzz_support.h"
#include "kolo/kolo.h"
#include "runtime/config.h"
#include "runtime/ignored_settings.h"
#include "runtime/settings_record.h"

namespace {

// The variables config_from_environment() asks for, in the order it asks.
const std::vector<std::string>& variables_kolo_reads() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> asked;
    kolo::config_from_environment([&asked](const std::string& name) -> std::optional<std::string> {
      asked.push_back(name);
      return std::nullopt;
    });
    return asked;
  }();
  return names;
}

std::map<std::string, std::string> environment_from(std::string_view input) {
  const std::vector<std::string>& known = variables_kolo_reads();
  std::map<std::string, std::string> environment;
  for (std::size_t start = 0; start < input.size();) {
    const std::size_t end = std::min(input.find('\n', start), input.size());
    const std::string_view line = input.substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    if (const std::size_t equals = line.find('='); equals != std::string_view::npos)
      environment[std::string(line.substr(0, equals))] = line.substr(equals + 1);
    else
      environment[known[static_cast<uint8_t>(line[0]) % known.size()]] = line.substr(1);
  }
  return environment;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::map<std::string, std::string> environment = environment_from(kolo_fuzz::as_text(data, size));
  kolo::Config config;
  try {
    config = kolo::config_from_environment([&](const std::string& name) -> std::optional<std::string> {
      auto it = environment.find(name);
      if (it == environment.end()) return std::nullopt;
      return it->second;
    });
  } catch (const kolo::Error&) {
    return 0;
  }
  kolo_fuzz::require(config.control_timeout().count() > 0, "a control timeout that bounds every wait");
  kolo_fuzz::require(config.cycle_time().count() >= 0, "a cycle time of no less than nothing");
  config.describe();
  kolo::ignored_setting_warnings({environment.begin(), environment.end()}, config, kolo::BuildFacts{});
  kolo::Config read_back;
  kolo::apply_settings_record(kolo::settings_record(config), read_back);
  return 0;
}
