#include "exit_report.h"

#include <csignal>
#include <cstring>
#include <regex>

namespace kolo::launcher {
namespace {

std::optional<RankFailure> from_line(const std::string& line, const std::string* next_line) {
  static const std::regex process_name(R"(Process name:\s*\[\[\d+,\d+\],(\d+)\])");
  static const std::regex exit_code(R"(Exit code:\s*(-?\d+))");
  static const std::regex noticed(
      R"(process rank (\d+) with PID \d+ on node (\S+) exited on signal (\d+))");
  static const std::regex srun_error(R"(srun: error: ([^:\s]+): tasks? (\d+)[-,\d]*: (.*))");
  static const std::regex srun_exit(R"(Exited with exit code (\d+))");
  std::smatch m;
  if (std::regex_search(line, m, process_name)) {
    RankFailure failure{std::stoi(m[1]), "", std::nullopt, std::nullopt};
    std::smatch code;
    if (next_line && std::regex_search(*next_line, code, exit_code))
      failure.exit_code = std::stoi(code[1]);
    return failure;
  }
  if (std::regex_search(line, m, noticed))
    return RankFailure{std::stoi(m[1]), m[2], std::nullopt, std::stoi(m[3])};
  if (std::regex_search(line, m, srun_error)) {
    RankFailure failure{std::stoi(m[2]), m[1], std::nullopt, std::nullopt};
    const std::string how = m[3];
    std::smatch code;
    if (std::regex_search(how, code, srun_exit)) failure.exit_code = std::stoi(code[1]);
    for (int sig = 1; sig < NSIG && !failure.exit_code && !failure.signal; ++sig)
      if (const char* name = strsignal(sig); name && how == name) failure.signal = sig;
    return failure;
  }
  return std::nullopt;
}

}  // namespace

std::optional<RankFailure> find_rank_failure(const std::deque<std::string>& lines) {
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string* next = i + 1 < lines.size() ? &lines[i + 1] : nullptr;
    if (auto failure = from_line(lines[i], next)) return failure;
  }
  return std::nullopt;
}

int job_exit_code(const std::optional<RankFailure>& failure, int launcher_exit_code) {
  if (failure && failure->exit_code && *failure->exit_code != 0) return *failure->exit_code & 0xff;
  if (failure && failure->signal) return 128 + *failure->signal;
  return launcher_exit_code != 0 ? launcher_exit_code : 1;
}

std::string describe_job_failure(const std::optional<RankFailure>& failure,
                                 const JobOutput& output, Launcher launcher,
                                 int launcher_exit_code) {
  if (!failure)
    return std::string("kolorun: ") + launcher_name(launcher) + " exited with code " +
           std::to_string(launcher_exit_code) + " (no rank named in its messages above)\n";
  std::string host = failure->host;
  if (auto it = output.starts().find(failure->rank); host.empty() && it != output.starts().end())
    host = it->second.host;
  std::string text = "kolorun: rank " + std::to_string(failure->rank);
  if (!host.empty()) text += " (on " + host + ")";
  if (failure->exit_code) text += " exited with code " + std::to_string(*failure->exit_code);
  else if (failure->signal)
    text += " was killed by signal " + std::to_string(*failure->signal) + " (" +
            strsignal(*failure->signal) + ")";
  else text += " failed";
  const std::vector<std::string> tail = output.tail(failure->rank);
  if (tail.empty()) return text + "; it printed nothing\n";
  text += "; its last lines:\n";
  for (const std::string& line : tail) text += "  [" + std::to_string(failure->rank) + "]" + line + "\n";
  return text;
}

}  // namespace kolo::launcher
