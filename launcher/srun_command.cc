// The srun command line inside a SLURM allocation. Debian's Open MPI talks to Slurm
// only through PMIx: `--mpi=pmi2` fails with "OMPI was not built with SLURM's PMI
// support" (shared/infra/README.md, section 1).
#include "command.h"

#include "kolo/kolo.h"

namespace kolo::launcher {
namespace {

bool user_sets_kill_on_bad_exit(const LaunchOptions& o, const Environment& env) {
  if (find_variable(env, "SLURM_KILL_BAD_EXIT")) return true;
  for (const std::string& arg : o.mpi_args)
    if (arg.rfind("--kill-on-bad-exit", 0) == 0 || arg.rfind("-K", 0) == 0) return true;
  return false;
}

}  // namespace

LaunchCommand build_srun_command(const LaunchOptions& o, const std::vector<HostSlots>& hosts,
                                 const LaunchContext& context) {
  // check_hosts_for_launcher (preflight.h) refuses -H/--hostfile under srun, with the reason.
  if (!hosts.empty()) throw Error(StatusCode::InvalidArgument, "kolorun: -H/--hostfile cannot be used with srun");
  LaunchCommand command;
  command.launcher = Launcher::Srun;
  // srun exports its whole environment to the tasks (--export=ALL is the default), so
  // the variables go into its environment rather than onto its command line.
  command.set = variables_from_flags(o);
  if (!user_sets_mca_parameter(o, context.environment, "mpi_yield_when_idle"))
    command.set.push_back({"OMPI_MCA_mpi_yield_when_idle", "1"});  // command.h says why
  if (!o.network_interface.empty()) {
    command.set.push_back({"OMPI_MCA_btl_tcp_if_include", o.network_interface});
    command.set.push_back({"OMPI_MCA_oob_tcp_if_include", o.network_interface});
  }
  // --label: "R: " before every line, how kolorun tells the ranks' output apart;
  // --kill-on-bad-exit: one failed rank ends the step at once, as under mpirun (unless
  // the user chose otherwise: srun's -K/--kill-on-bad-exit or SLURM_KILL_BAD_EXIT).
  // --export=ALL: the default, said again for a job whose SLURM_EXPORT_ENV is NONE (sbatch
  // --export=NONE), where the ranks would get none of the variables above.
  command.argv = {context.srun, "--mpi=pmix", "-n", std::to_string(o.num_ranks), "--label", "--export=ALL"};
  if (!user_sets_kill_on_bad_exit(o, context.environment)) command.argv.push_back("--kill-on-bad-exit=1");
  // srun's name for more tasks than CPUs.
  if (o.oversubscribe) command.argv.push_back("--overcommit");
  command.argv.insert(command.argv.end(), o.mpi_args.begin(), o.mpi_args.end());
  const std::vector<std::string> ranks = rank_command(o, context);
  command.argv.insert(command.argv.end(), ranks.begin(), ranks.end());
  return command;
}

}  // namespace kolo::launcher
