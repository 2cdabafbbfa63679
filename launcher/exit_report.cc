#include "exit_report.h"

#include <csignal>
#include <cstring>
#include <regex>

namespace kolo::launcher {

std::optional<RankFailure> rank_failure_in_line(const std::string& line, const std::string* next_line) {
  static const std::regex process_name(R"(Process name:\s*\[\[\d+,\d+\],(\d+)\])");
  static const std::regex exit_code(R"(Exit code:\s*(-?\d+))");
  static const std::regex noticed(
      R"(process rank (\d+) with PID \d+ on node (\S+) exited on signal (\d+))");
  static const std::regex srun_error(R"(srun: error: ([^:\s]+): tasks? (\d+)[-,\d]*: (.*))");
  static const std::regex srun_exit(R"(Exited with exit code (\d+))");
  std::smatch m;
  if (std::regex_search(line, m, process_name)) {
    const std::optional<int> rank = int_of_digits(m[1]);
    if (!rank) return std::nullopt;
    RankFailure failure{*rank, "", std::nullopt, std::nullopt};
    std::smatch code;
    if (next_line && std::regex_search(*next_line, code, exit_code)) failure.exit_code = int_of_digits(code[1]);
    return failure;
  }
  if (std::regex_search(line, m, noticed)) {
    const std::optional<int> rank = int_of_digits(m[1]);
    if (!rank) return std::nullopt;
    return RankFailure{*rank, m[2], std::nullopt, int_of_digits(m[3])};
  }
  if (std::regex_search(line, m, srun_error)) {
    const std::optional<int> rank = int_of_digits(m[2]);
    if (!rank) return std::nullopt;
    RankFailure failure{*rank, m[1], std::nullopt, std::nullopt};
    const std::string how = m[3];
    std::smatch code;
    if (std::regex_search(how, code, srun_exit)) failure.exit_code = int_of_digits(code[1]);
    for (int sig = 1; sig < NSIG && !failure.exit_code && !failure.signal; ++sig)
      if (const char* name = strsignal(sig); name && how == name) failure.signal = sig;
    return failure;
  }
  return std::nullopt;
}

std::optional<RankFailure> find_rank_failure(const std::deque<std::string>& lines) {
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string* next = i + 1 < lines.size() ? &lines[i + 1] : nullptr;
    if (auto failure = rank_failure_in_line(lines[i], next)) return failure;
  }
  return std::nullopt;
}

int job_exit_code(const std::optional<RankFailure>& failure, int launcher_exit_code) {
  if (failure && failure->exit_code && *failure->exit_code != 0) return *failure->exit_code & 0xff;
  if (failure && failure->signal) return 128 + *failure->signal;
  return launcher_exit_code != 0 ? launcher_exit_code : 1;
}

namespace {

std::string host_of(int rank, const JobOutput& output) {
  auto it = output.starts().find(rank);
  return it == output.starts().end() ? "" : it->second.host;
}

std::string with_host(int rank, const std::string& host) {
  return "rank " + std::to_string(rank) + (host.empty() ? "" : " (on " + host + ")");
}

// "; its last lines:\n  [R]<stdout>:..." or "; it printed nothing\n".
std::string last_lines(int rank, const JobOutput& output, const std::string& whose) {
  const std::vector<std::string> tail = output.tail(rank);
  if (tail.empty()) return "; " + (whose == "its" ? std::string("it") : "rank " + std::to_string(rank)) + " printed nothing\n";
  std::string text = "; " + whose + " last lines:\n";
  for (const std::string& line : tail) text += "  [" + std::to_string(rank) + "]" + line + "\n";
  return text;
}

}  // namespace

std::optional<std::string> find_lost_host(const std::deque<std::string>& lines) {
  static const std::regex remote_daemon(R"(Remote daemon:\s*\[\[\d+,\d+\],\d+\] on node (\S+))");
  bool lost = false;
  for (const std::string& line : lines) {
    lost = lost || line.find("ORTE has lost communication with a remote daemon") != std::string::npos;
    std::smatch m;
    if (lost && std::regex_search(line, m, remote_daemon)) return m[1];
  }
  return std::nullopt;
}

std::string describe_lost_host(const std::string& host, const JobOutput& output, int launcher_exit_code) {
  std::string ranks;
  for (const auto& [rank, start] : output.starts())
    if (start.host == host) ranks += (ranks.empty() ? "" : ", ") + std::to_string(rank);
  return "kolorun: mpirun lost its daemon on " + host +
         (ranks.empty() ? "" : " (" + std::string(ranks.find(',') == std::string::npos ? "rank " : "ranks ") + ranks +
                                   " ran there)") +
         ": that host or its network link failed; mpirun exited with code " + std::to_string(launcher_exit_code) + "\n";
}

std::string describe_kolo_fatal(const KoloFatal& fatal, const JobOutput& output) {
  std::string text = "kolorun: kolo on " + with_host(fatal.rank, host_of(fatal.rank, output)) +
                     " ended the job: " + fatal.why;
  if (!fatal.roll_called) return text + last_lines(fatal.rank, output, "its");
  if (fatal.silent.empty()) return text + "; every rank answered the roll call" + last_lines(fatal.rank, output, "its");
  text += fatal.silent.size() == 1 ? "; " : "; ranks ";
  for (size_t i = 0; i < fatal.silent.size(); ++i) {
    const int rank = fatal.silent[i];
    const std::string host = host_of(rank, output);
    text += (i ? ", " : "") + (fatal.silent.size() == 1 ? with_host(rank, host)
                                                        : std::to_string(rank) + (host.empty() ? "" : " (on " + host + ")"));
  }
  const int first = fatal.silent.front();
  return text + " did not answer the roll call" + last_lines(first, output, "rank " + std::to_string(first) + "'s");
}

std::string describe_job_failure(const std::optional<RankFailure>& failure,
                                 const JobOutput& output, Launcher launcher,
                                 int launcher_exit_code) {
  if (!failure)
    return std::string("kolorun: ") + launcher_name(launcher) + " exited with code " +
           std::to_string(launcher_exit_code) + " (no rank named in its messages above)\n";
  const std::string host = failure->host.empty() ? host_of(failure->rank, output) : failure->host;
  std::string text = "kolorun: " + with_host(failure->rank, host);
  if (failure->exit_code) text += " exited with code " + std::to_string(*failure->exit_code);
  else if (failure->signal)
    text += " was killed by signal " + std::to_string(*failure->signal) + " (" +
            strsignal(*failure->signal) + ")";
  else text += " failed";
  return text + last_lines(failure->rank, output, "its");
}

}  // namespace kolo::launcher
