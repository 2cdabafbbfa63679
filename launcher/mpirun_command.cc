// The mpirun command line, modelled on horovodrun's (horovod/runner/mpi_run.py) for
// Open MPI 4.1.
#include "command.h"

#include <algorithm>

namespace kolo::launcher {

LaunchCommand build_mpirun_command(const LaunchOptions& o, const std::vector<HostSlots>& hosts,
                                   const LaunchContext& context) {
  LaunchCommand command;
  command.launcher = Launcher::Mpirun;
  std::vector<std::string>& argv = command.argv;
  argv.push_back(context.mpirun);
  if (context.running_as_root) {
    // The flag for mpirun itself; the variables for wrappers and nested launches.
    argv.push_back("--allow-run-as-root");
    command.set.push_back({"OMPI_ALLOW_RUN_AS_ROOT", "1"});
    command.set.push_back({"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"});
  }
  // "[1,R]<stdout>:" on every line: how kolorun tells the ranks' output apart
  // (output_parser.h says why this and not --output-filename).
  argv.push_back("--tag-output");
  argv.insert(argv.end(), {"-np", std::to_string(o.num_ranks)});
  // The hosts as kolorun read them, as -H (horovodrun passes them so): a hostfile may use
  // the host:N lines that mpirun's own reader refuses. A hostfile with a line without slots
  // goes as it is, since there mpirun counts the host's cores (-H would give it one slot);
  // such a file has no host:N line (read_hostfile refuses the mix).
  const bool every_host_has_slots = std::all_of(hosts.begin(), hosts.end(), [](const HostSlots& h) { return h.slots; });
  if (!o.hostfile.empty() && !every_host_has_slots) argv.insert(argv.end(), {"--hostfile", o.hostfile});
  else if (!hosts.empty()) argv.insert(argv.end(), {"-H", format_host_list(hosts)});
  // Ranks fill each host's slots in order and are not pinned: kolo's background thread
  // and the framework's own threads need more than the one core binding would give.
  argv.insert(argv.end(), {"-bind-to", "none", "-map-by", "slot"});
  // More ranks than slots only when asked for (check_rank_count refuses them otherwise).
  if (o.oversubscribe) argv.push_back("--oversubscribe");
  // command.h says why each.
  if (!user_sets_mca_parameter(o, context.environment, "mpi_yield_when_idle"))
    argv.insert(argv.end(), {"--mca", "mpi_yield_when_idle", "1"});
  for (const McaParameter& p : kOobKeepalive)
    if (!user_sets_mca_parameter(o, context.environment, p.name))
      argv.insert(argv.end(), {"--mca", std::string(p.name), std::string(p.value)});
  if (!o.network_interface.empty()) {
    argv.insert(argv.end(), {"--mca", "btl_tcp_if_include", o.network_interface});
    argv.insert(argv.end(), {"--mca", "oob_tcp_if_include", o.network_interface});
  }
  // Inside an allocation the TaskProlog gives each node its own shared-memory directory;
  // mpirun would copy this node's to every node (docs/launcher.md, SLURM).
  if (find_variable(context.environment, "SLURM_JOB_ID") &&
      find_variable(context.environment, "OMPI_MCA_btl_vader_backing_directory"))
    command.unset.push_back("OMPI_MCA_btl_vader_backing_directory");

  const std::vector<EnvVar> from_flags = variables_from_flags(o);
  for (const std::string& name : forwarded_variable_names(context.environment, from_flags))
    argv.insert(argv.end(), {"-x", name});
  for (const EnvVar& var : from_flags) argv.insert(argv.end(), {"-x", var.name + "=" + var.value});
  argv.insert(argv.end(), o.mpi_args.begin(), o.mpi_args.end());

  const std::vector<std::string> ranks = rank_command(o, context);
  argv.insert(argv.end(), ranks.begin(), ranks.end());
  return command;
}

}  // namespace kolo::launcher
