// The command kolorun runs: `mpirun ...` or `srun ...`, with the program behind the rank
// shim (rank_exec.h). Building it is pure — every fact about the machine comes in a
// LaunchContext — so that tests can check the exact argv for any flags and environment.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "environment.h"
#include "hosts.h"
#include "options.h"

namespace kolo::launcher {

enum class Launcher { Mpirun, Srun };
const char* launcher_name(Launcher launcher);

struct LaunchContext {
  Environment environment;     // kolorun's own
  bool running_as_root = false;
  int local_cores = 1;         // cores mpirun counts as slots on this machine
  std::string kolorun_path;    // this program, for the rank shim on every host
  std::string mpirun = "mpirun";  // or $KOLO_MPIRUN (e.g. a wrapper script)
  std::string srun = "srun";
};

struct LaunchCommand {
  Launcher launcher = Launcher::Mpirun;
  std::vector<std::string> unset;  // removed from the launcher's environment
  std::vector<EnvVar> set;         // added to it
  std::vector<std::string> argv;   // argv[0] is looked up on PATH when it has no '/'
};

// --launcher auto picks srun inside a SLURM allocation (SLURM_JOB_ID set), else mpirun.
Launcher choose_launcher(const LaunchOptions& options, const Environment& env);

// `hosts` is empty when neither -H nor --hostfile was given.
LaunchCommand build_command(const LaunchOptions& options, const std::vector<HostSlots>& hosts,
                            const LaunchContext& context);
LaunchCommand build_mpirun_command(const LaunchOptions& options,
                                   const std::vector<HostSlots>& hosts,
                                   const LaunchContext& context);
LaunchCommand build_srun_command(const LaunchOptions& options,
                                 const std::vector<HostSlots>& hosts,
                                 const LaunchContext& context);

// The rank shim and the program: what mpirun/srun start on every rank.
std::vector<std::string> rank_command(const LaunchOptions& options, const LaunchContext& context);

// Whether the user has set the Open MPI parameter `name` (OMPI_MCA_<name> in the
// environment, or `name` in --mpi-args): kolorun then leaves its own value out, since
// Open MPI refuses a parameter given twice. kolorun sets these unless the user has:
//   mpi_yield_when_idle 1: a rank waiting in MPI yields its core. A kolo rank has two busy
//     threads (the compute thread and the background thread in blocking MPI calls); with
//     MPI spinning, the waiting one takes the core the other needs (docs/perf.md, scaling).
//   oob_tcp_keepalive_{time,intvl,probes} (mpirun only, kOobKeepalive): mpirun and its
//     daemons notice a cut link within seconds instead of 8 minutes (docs/launcher.md,
//     Failures).
bool user_sets_mca_parameter(const LaunchOptions& options, const Environment& env, std::string_view name);

struct McaParameter {
  std::string_view name;
  std::string_view value;
};
// Idle seconds, then seconds between probes, then unanswered probes: about 11 s in all.
inline constexpr McaParameter kOobKeepalive[] = {
    {"oob_tcp_keepalive_time", "5"}, {"oob_tcp_keepalive_intvl", "2"}, {"oob_tcp_keepalive_probes", "3"}};

// One line a POSIX shell runs as the same command: `env -u X A=1 mpirun ...` when the
// environment changes, words quoted only where needed.
std::string format_command(const LaunchCommand& command);
std::string shell_quote(const std::string& word);

}  // namespace kolo::launcher
