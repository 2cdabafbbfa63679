#include "remote_kill.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <tuple>

#include "command.h"
#include "kolo/kolo.h"
#include "preflight.h"
#include "bounded_run.h"
#include "spawn_launcher.h"

namespace kolo::launcher {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::string_view kReport = "kolorun-remote-kill ";

// k PID TICKS: SIGKILL PID if /proc/PID/stat still shows start ticks TICKS (field 22; the
// command name before it may hold spaces and parentheses, so the fields are counted from
// the last ") ") and it is no zombie. POSIX sh, one line, no single quotes and no '!'
// (csh would expand it even inside the quotes a login shell sees).
constexpr std::string_view kKillFunction =
    "k(){ s=$(cat /proc/$1/stat 2>/dev/null)||return 0;n=$(cat /proc/$1/comm 2>/dev/null);"
    "set -- $1 $2 ${s##*) };case $3 in Z|X)return 0;;esac;"
    "[ \"$2\" = \"${22}\" ]&&kill -9 $1 2>/dev/null&&echo \"kolorun-remote-kill killed $1 $n\";};";

std::string ranks_text(const std::vector<int>& ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text;
}

std::string last_line(const std::string& text) {
  std::istringstream in(text);
  std::string last;
  for (std::string line; std::getline(in, line);)
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  return last;
}

}  // namespace

RemoteProcesses remote_processes(const std::map<int, RankStart>& starts, const std::string& here) {
  RemoteProcesses processes;
  // Parents by host, pid and start ticks: the ranks each started.
  std::map<std::tuple<std::string, long, unsigned long long>, std::vector<int>> parents;
  for (const auto& [rank, start] : starts)
    if (start.host != here && start.parent_pid > 1 && start.parent_start_ticks != 0)
      parents[{start.host, start.parent_pid, start.parent_start_ticks}].push_back(rank);
  // The parents first: a daemon killed after its ranks could still act on their deaths.
  for (const auto& [key, ranks] : parents) {
    const auto& [host, pid, ticks] = key;
    processes[host].push_back({pid, ticks, "the parent of " + ranks_text(ranks)});
  }
  for (const auto& [rank, start] : starts)
    if (start.host != here && start.start_ticks != 0)
      processes[start.host].push_back({start.pid, start.start_ticks, ranks_text({rank})});
  return processes;
}

std::vector<std::string> remote_agent(const LaunchOptions& options, const Environment& env) {
  std::string value = find_variable(env, "OMPI_MCA_plm_rsh_agent").value_or("ssh : rsh");
  const std::vector<std::string>& args = options.mpi_args;
  for (size_t i = 0; i + 2 < args.size(); ++i)
    if ((args[i] == "--mca" || args[i] == "-mca") && args[i + 1] == "plm_rsh_agent") value = args[i + 2];
  std::vector<std::string> first;
  std::istringstream alternatives(value);
  for (std::string alternative; std::getline(alternatives, alternative, ':');) {
    std::vector<std::string> words = split_on_spaces(alternative);
    if (words.empty()) continue;
    if (first.empty()) first = words;
    if (!find_executable(words[0], env).empty()) return words;
  }
  return first;  // none found: running it says so
}

std::vector<std::string> remote_kill_command(const std::vector<std::string>& agent, const std::string& host,
                                             const std::vector<RemoteProcess>& processes) {
  if (host.empty() || host[0] == '-')
    throw Error(StatusCode::InvalidArgument,
                "kolorun: cannot ask host '" + host + "' through the remote agent: not a host name");
  std::string script(kKillFunction);
  for (const RemoteProcess& p : processes)
    script += "k " + std::to_string(p.pid) + " " + std::to_string(p.start_ticks) + ";";
  script += "echo " + std::string(kReport) + "done";
  std::vector<std::string> argv = agent;
  argv.push_back(host);
  argv.push_back("sh -c " + shell_quote(script));
  return argv;
}

RemoteKillOutcome read_remote_kill_report(const std::string& host, const std::vector<RemoteProcess>& asked,
                                          const std::string& out, const std::string& err, int exit_code,
                                          double bound_seconds) {
  RemoteKillOutcome outcome{host, false, {}, ""};
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(kReport, 0) != 0) continue;
    const std::string report = line.substr(kReport.size());
    if (report == "done") outcome.reached = true;
    std::istringstream words(report);
    std::string verb;
    long pid = 0;
    if (!(words >> verb >> pid) || verb != "killed") continue;
    std::string name;
    std::getline(words >> std::ws, name);
    for (const RemoteProcess& p : asked)
      if (p.pid == pid) outcome.killed.push_back({p, name});
  }
  if (outcome.reached) return outcome;
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%g", bound_seconds);
  outcome.failure = exit_code < 0 ? "no answer within " + std::string(seconds) + " s"
                                  : "exit code " + std::to_string(exit_code);
  if (const std::string message = last_line(err); !message.empty()) outcome.failure += ": " + message;
  return outcome;
}

std::vector<RemoteKillOutcome> kill_remote_processes(const std::vector<std::string>& agent,
                                                     const RemoteProcesses& processes, double bound_seconds) {
  const Environment env = current_environment();
  std::vector<BoundedRun> runs;
  for (const auto& [host, asked] : processes) {
    BoundedRun& run = runs.emplace_back();
    run.name = host;
    try {
      run.process = spawn_launcher(remote_kill_command(agent, host, asked), env, Terminal::Detached);
    } catch (const Error& e) {
      constexpr std::string_view kPrefix = "kolorun: ";
      run.spawn_error = e.what();
      if (run.spawn_error.rfind(kPrefix, 0) == 0) run.spawn_error.erase(0, kPrefix.size());
    }
  }
  watch(runs, Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(bound_seconds)));
  std::vector<RemoteKillOutcome> outcomes;
  for (BoundedRun& run : runs) {
    end_run(run);
    const std::vector<RemoteProcess>& asked = processes.at(run.name);
    if (!run.spawn_error.empty()) {
      outcomes.push_back({run.name, false, {}, run.spawn_error});
      continue;
    }
    outcomes.push_back(read_remote_kill_report(run.name, asked, run.out, run.err, run.exited ? run.ended.code : -1,
                                               bound_seconds));
  }
  return outcomes;
}

std::string describe_remote_kill(const RemoteKillOutcome& outcome, const std::vector<RemoteProcess>& asked,
                                 const std::string& agent_name) {
  std::string text;
  for (const KilledProcess& k : outcome.killed)
    text += "kolorun: " + k.process.what + " (host " + outcome.host + ", pid " + std::to_string(k.process.pid) +
            (k.name.empty() ? "" : ", " + k.name) + ") was still running: killed it (SIGKILL, through " +
            agent_name + ")\n";
  if (outcome.reached) return text;
  std::string left;
  for (const RemoteProcess& p : asked) {
    const bool killed = std::any_of(outcome.killed.begin(), outcome.killed.end(),
                                    [&](const KilledProcess& k) { return k.process == p; });
    if (!killed) left += (left.empty() ? "" : ", ") + p.what + " (pid " + std::to_string(p.pid) + ")";
  }
  return text + "kolorun: could not reach " + outcome.host + " through " + agent_name + " (" + outcome.failure +
         "); left there, unless they have ended: " + left + "\n";
}

}  // namespace kolo::launcher
