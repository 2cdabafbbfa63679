// The command kolorun runs: `mpirun ...` or `srun ...`, with the program behind the rank
// shim (rank_exec.h). Building it is pure — every fact about the machine comes in a
// LaunchContext — so that tests can check the exact argv for any flags and environment.
#pragma once

#include <string>
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

// Whether Open MPI should yield the core while a rank waits: unless the user set
// mpi_yield_when_idle already (in the environment or in --mpi-args). A kolo rank has two
// busy threads (the compute thread and the background thread in blocking MPI calls); with
// MPI spinning, the waiting one takes the core the other needs (docs/perf.md, scaling).
bool should_set_yield_when_idle(const LaunchOptions& options, const Environment& env);

// One line a POSIX shell runs as the same command: `env -u X A=1 mpirun ...` when the
// environment changes, words quoted only where needed.
std::string format_command(const LaunchCommand& command);
std::string shell_quote(const std::string& word);

}  // namespace kolo::launcher
