// Ends what a job left running on other hosts, where kolorun has no /proc to look at.
//
// Why: a host cut off from mpirun keeps its Open MPI daemon (orted) after kolo has ended
// the host's ranks. The daemon's report to mpirun is data in flight, which TCP retransmits
// for about 15 minutes and no keepalive probes; mpirun, killed, cannot tell it to stop.
// kolorun therefore asks the host itself, through the remote agent mpirun starts its
// daemons with (Open MPI's plm_rsh_agent: ssh by default). On a real cluster that agent
// may go over another network than the one that failed (a management network).
//
// On each host the agent runs one shell command line that SIGKILLs the ranks and their
// parents (the orted that started them) by pid, each only while /proc still shows the
// start time of its start report (rank_exec.h): a reused pid is never killed. A host the
// agent cannot reach within the bound is named with what may still run there.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "environment.h"
#include "options.h"
#include "rank_exec.h"

namespace kolo::launcher {

struct RemoteProcess {
  long pid = 0;
  unsigned long long start_ticks = 0;
  std::string what;  // "rank 2", "the parent of ranks 2, 3"
  bool operator==(const RemoteProcess&) const = default;
};
using RemoteProcesses = std::map<std::string, std::vector<RemoteProcess>>;  // by host

// The ranks of `starts` on hosts other than `here`, after their parents (one entry for a
// parent of several ranks). Processes whose start time is unknown are left out: they
// could not be told apart from a reused pid.
RemoteProcesses remote_processes(const std::map<int, RankStart>& starts, const std::string& here);

// Open MPI's plm_rsh_agent as mpirun would use it: `--mca plm_rsh_agent V` in --mpi-args,
// else OMPI_MCA_plm_rsh_agent, else Open MPI's default "ssh : rsh". Of the alternatives
// (separated by ':') the first found on PATH, split into words ("ssh -x" is two).
std::vector<std::string> remote_agent(const LaunchOptions& options, const Environment& env);

// The agent's argv for `host`: the agent, the host, and one command line, which the agent
// hands to a shell there as ssh does (`sh -c '...'`, so that the remote login shell only
// has to undo one pair of quotes). It prints "kolorun-remote-kill killed PID NAME" for
// each process it killed, then "kolorun-remote-kill done". Throws kolo::Error
// (InvalidArgument) for a host name the agent would take for an option.
std::vector<std::string> remote_kill_command(const std::vector<std::string>& agent, const std::string& host,
                                             const std::vector<RemoteProcess>& processes);

struct KilledProcess {
  RemoteProcess process;
  std::string name;  // its command name there
};

struct RemoteKillOutcome {
  std::string host;
  bool reached = false;  // the host ran the whole command
  std::vector<KilledProcess> killed;
  std::string failure;   // not reached: why, with the agent's last message
};

// What the agent printed: `exit_code` is -1 when it was killed at the bound.
RemoteKillOutcome read_remote_kill_report(const std::string& host, const std::vector<RemoteProcess>& asked,
                                          const std::string& out, const std::string& err, int exit_code,
                                          double bound_seconds);

// Runs one agent per host, all at once, with stdin from /dev/null and no terminal; an
// agent still running after `bound_seconds` is killed with its process group.
std::vector<RemoteKillOutcome> kill_remote_processes(const std::vector<std::string>& agent,
                                                     const RemoteProcesses& processes, double bound_seconds);

// kolorun's lines for one host: one per process killed, or the host not reached and what
// may still run there.
std::string describe_remote_kill(const RemoteKillOutcome& outcome, const std::vector<RemoteProcess>& asked,
                                 const std::string& agent_name);

}  // namespace kolo::launcher
