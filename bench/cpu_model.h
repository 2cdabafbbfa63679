// The CPU a benchmark ran on, for its first line: a figure from one CPU model is one sample
// (docs/perf.md keeps a table per model).
#pragma once

#include <fstream>
#include <string>
#include <thread>

namespace kolo_bench {

// "AMD EPYC 7B13 (2 logical CPUs)", from /proc/cpuinfo's first "model name"; "unknown" elsewhere.
inline std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, model = "unknown";
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      model = line.substr(line.find(':') + 1);
      model.erase(0, model.find_first_not_of(' '));
      break;
    }
  }
  return model + " (" + std::to_string(std::thread::hardware_concurrency()) + " logical CPUs)";
}

}  // namespace kolo_bench
