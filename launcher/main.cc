// kolorun: starts a kolo job on N ranks, like horovodrun (docs/launcher.md).
//
//   kolorun -np 4 -H node0:2,node1:2 --fusion-threshold-mb 32 python3 train.py
//
// Flags become KOLO_ variables for every rank; mpirun (or srun inside a SLURM
// allocation) starts the ranks; kolorun watches them and, when one fails, says which
// rank, how, and what it printed last.
//
// Exit status: 0 when every rank exits 0; the failed rank's code (128 + signal when it
// was killed); 2 for a bad command line; 1 when a check before the launch fails;
// 124 when not every rank started within --start-timeout; 128 + signal when kolorun
// was stopped by SIGINT/SIGTERM/SIGHUP.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "check_build.h"
#include "command.h"
#include "exit_report.h"
#include "job_output.h"
#include "kolo/kolo.h"
#include "options.h"
#include "preflight.h"
#include "rank_exec.h"
#include "supervisor.h"

using namespace kolo::launcher;

namespace {

constexpr int kExitCheckFailed = 1;
constexpr int kExitBadCommandLine = 2;
constexpr int kExitStartTimeout = 124;
constexpr std::chrono::milliseconds kHostLookupBound{5000};

std::vector<HostSlots> hosts_of(const LaunchOptions& options) {
  if (!options.hostfile.empty()) return read_hostfile(options.hostfile);
  if (!options.hosts.empty()) return parse_host_list(options.hosts);
  return {};
}

LaunchContext context_of(const Environment& env) {
  LaunchContext context;
  context.environment = env;
  context.running_as_root = running_as_root();
  context.local_cores = local_cores();
  context.kolorun_path = this_program_path();
  if (auto mpirun = find_variable(env, "KOLO_MPIRUN"); mpirun && !mpirun->empty())
    context.mpirun = *mpirun;
  return context;
}

// Everything that can be known wrong before the launch. Host names are looked up only
// for plain mpirun: a KOLO_MPIRUN wrapper may reach hosts this machine cannot resolve
// (the network-namespace hosts of shared/infra), and srun takes no host list. A dry run
// only warns about them: its command is often composed here and run on another machine.
void check_before_launch(const LaunchOptions& options, const std::vector<HostSlots>& hosts,
                         const LaunchCommand& command, const LaunchContext& context) {
  check_program(options.command.front(), context.environment);
  check_launcher_program(command, context.environment);
  check_slots(options.num_ranks, hosts, options.hostfile.empty() ? "-H" : "--hostfile");
  const bool custom_mpirun = context.mpirun != "mpirun";
  if (command.launcher == Launcher::Mpirun && !custom_mpirun && !hosts.empty())
    check_hosts_resolve(hosts, kHostLookupBound,
                        options.dry_run ? UnresolvedHost::Warn : UnresolvedHost::Fail);
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string text;
  for (int rank : ranks) text += (text.empty() ? "" : ", ") + std::to_string(rank);
  return text;
}

int report(const JobEnd& end, const JobOutput& output, const LaunchOptions& options,
           Launcher launcher) {
  switch (end.reason) {
    case JobEnd::Reason::Interrupted:
      std::fprintf(stderr, "kolorun: job stopped (kolorun got SIG%s)\n",
                   sigabbrev_np(end.received_signal));
      return 128 + end.received_signal;
    case JobEnd::Reason::StartTimeout:
      std::fprintf(stderr,
                   "kolorun: only %d of %d ranks started within --start-timeout %g s "
                   "(not started: %s). A host may be unreachable, or slow to start the "
                   "program; raise --start-timeout if it is only slow.\n",
                   output.started_ranks(), options.num_ranks, options.start_timeout_seconds,
                   rank_list(output.ranks_not_started()).c_str());
      return kExitStartTimeout;
    case JobEnd::Reason::LauncherExited: break;
  }
  if (end.launcher_exit_code == 0) return 0;
  const std::optional<RankFailure> failure = find_rank_failure(output.launcher_lines());
  std::fputs(describe_job_failure(failure, output, launcher, end.launcher_exit_code).c_str(),
             stderr);
  return job_exit_code(failure, end.launcher_exit_code);
}

int launch(const LaunchOptions& options) {
  // A closed terminal or pipe must not kill kolorun while the job runs (the launcher
  // gets the default action back).
  std::signal(SIGPIPE, SIG_IGN);
  const LaunchContext context = context_of(current_environment());
  const std::vector<HostSlots> hosts = hosts_of(options);
  const LaunchCommand command = build_command(options, hosts, context);
  check_before_launch(options, hosts, command, context);
  if (options.dry_run) {
    std::printf("%s\n", format_command(command).c_str());
    return 0;
  }
  if (options.verbose) std::fprintf(stderr, "kolorun: running %s\n", format_command(command).c_str());
  if (!options.output_filename.empty()) {
    std::error_code error;
    std::filesystem::create_directories(options.output_filename, error);
    if (error)
      throw kolo::Error(kolo::StatusCode::InvalidArgument,
                        "kolorun: cannot create the --output-filename directory '" +
                            options.output_filename + "': " + error.message());
  }

  JobOutput output({options.num_ranks, options.output_filename, options.verbose});
  SupervisorSettings settings;
  settings.start_timeout_seconds = options.start_timeout_seconds;
  settings.kill_grace_seconds = options.kill_grace_seconds;
  settings.interrupt_signal = command.launcher == Launcher::Srun ? SIGTERM : SIGINT;
  settings.launcher_name = launcher_name(command.launcher);
  const JobEnd end = supervise(
      command.argv, apply_changes(context.environment, command.unset, command.set),
      command.launcher == Launcher::Srun ? make_srun_label_parser : make_mpirun_tag_parser,
      output, settings);
  if (options.verbose && end.seconds_to_start >= 0)
    std::fprintf(stderr, "kolorun: all %d ranks started %.2f s after the launch\n",
                 options.num_ranks, end.seconds_to_start);
  return report(end, output, options, command.launcher);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == kRankExecFlag) return rank_exec_main(argc - 2, argv + 2);

  std::optional<LaunchOptions> options;
  try {
    options = parse_command_line(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return kExitBadCommandLine;
  }
  if (!options) return 0;  // --help
  try {
    if (options->check_build) {
      std::fputs(describe_build(current_environment()).c_str(), stdout);
      return 0;
    }
    return launch(*options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return kExitCheckFailed;
  }
}
