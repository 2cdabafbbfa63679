// kolorun: starts a kolo job on N ranks, like horovodrun (docs/launcher.md).
//
//   kolorun -np 4 -H node0:2,node1:2 --fusion-threshold-mb 32 python3 train.py
//
// Flags become KOLO_ variables for every rank; mpirun (or srun inside a SLURM
// allocation) starts the ranks; kolorun watches them and, when one fails, says which
// rank, how, and what it printed last.
//
// Exit status: 0 when every rank exits 0; the failed rank's code (128 + signal when it
// was killed); 2 for a bad command line (a bad host list, -np beyond the hosts' slots
// included); 1 when a check before the launch fails (an unreadable hostfile included);
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
#include "elastic_driver.h"
#include "exit_report.h"
#include "gloo_launch.h"
#include "job_output.h"
#include "kolo/check.h"
#include "options.h"
#include "preflight.h"
#include "rank_exec.h"
#include "remote_kill.h"
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
  // kolo's line, when it came first, names the ranks that stopped answering: the launcher
  // saw only the ranks that kolo then ended, or that it killed.
  if (end.kolo_fatal) {
    std::fputs(describe_kolo_fatal(*end.kolo_fatal, output).c_str(), stderr);
    return end.kolo_fatal->exit_code.value_or(end.launcher_exit_code != 0 ? end.launcher_exit_code : 1);
  }
  const std::optional<RankFailure> failure = find_rank_failure(output.launcher_lines());
  if (std::optional<std::string> host = find_lost_host(output.launcher_lines()); !failure && host) {
    std::fputs(describe_lost_host(*host, output, end.launcher_exit_code).c_str(), stderr);
    return job_exit_code(failure, end.launcher_exit_code);
  }
  std::fputs(describe_job_failure(failure, output, launcher, end.launcher_exit_code).c_str(),
             stderr);
  return job_exit_code(failure, end.launcher_exit_code);
}

// --output-filename's folder, made before anything starts: one that cannot be made fails
// the launch (exit 1) rather than losing the ranks' logs.
void make_output_directory(const LaunchOptions& options) {
  if (options.output_filename.empty()) return;
  std::error_code error;
  std::filesystem::create_directories(options.output_filename, error);
  KOLO_CHECK(!error, kolo::StatusCode::IoError,
             "kolorun: cannot create the --output-filename directory '" + options.output_filename +
                 "': " + error.message());
}

int launch(const LaunchOptions& options, const std::vector<HostSlots>& hosts,
           const LaunchContext& context) {
  // A closed terminal or pipe must not kill kolorun while the job runs (the launcher
  // gets the default action back).
  std::signal(SIGPIPE, SIG_IGN);
  const LaunchCommand command = build_command(options, hosts, context);
  check_before_launch(options, hosts, command, context);
  if (options.dry_run) {
    std::printf("%s\n", format_command(command).c_str());
    return 0;
  }
  if (options.verbose) std::fprintf(stderr, "kolorun: running %s\n", format_command(command).c_str());
  make_output_directory(options);

  JobOutput output({options.num_ranks, options.output_filename, options.verbose});
  SupervisorSettings settings;
  settings.start_timeout_seconds = options.start_timeout_seconds;
  settings.kill_grace_seconds = options.kill_grace_seconds;
  settings.kill_after_failure_seconds = options.kill_after_failure_seconds;
  settings.failure_stop_signal = command.launcher == Launcher::Srun ? SIGTERM : SIGKILL;
  settings.interrupt_signal = command.launcher == Launcher::Srun ? SIGTERM : SIGINT;
  settings.launcher_name = launcher_name(command.launcher);
  if (command.launcher == Launcher::Mpirun) settings.remote_agent = remote_agent(options, context.environment);
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

  // The hosts and -np belong to the command line too; a hostfile that cannot be read is a
  // failed check (IoError).
  LaunchContext context;
  std::vector<HostSlots> hosts;
  try {
    context = context_of(current_environment());
    if (!options->check_build) {
      hosts = hosts_of(*options);
      check_rank_count(*options, hosts, context);
      check_hosts_for_launcher(*options, hosts, context);
    }
  } catch (const kolo::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return e.code() == kolo::StatusCode::IoError ? kExitCheckFailed : kExitBadCommandLine;
  }
  try {
    if (options->check_build) {
      std::fputs(describe_build(context.environment).c_str(), stdout);
      return 0;
    }
    if (options->gloo) {
      check_program(options->command.front(), context.environment);
      make_output_directory(*options);
      if (!starts_workers_with_srun(*options, context.environment)) {  // said, not silently dropped
        if (options->launcher == LauncherChoice::Srun)
          std::fputs("kolorun: --launcher srun ignored: outside a Slurm allocation kolorun starts a Gloo job's "
                     "workers itself\n", stderr);
        if (!options->mpi_args.empty())
          std::fputs("kolorun: --mpi-args ignored: kolorun starts this Gloo job's workers itself, with no mpirun "
                     "or srun\n", stderr);
      }
      if (options->elastic()) return run_elastic_job(*options, hosts, context);
      return run_gloo_job(*options, hosts, context);
    }
    return launch(*options, hosts, context);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return kExitCheckFailed;
  }
}
