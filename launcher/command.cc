#include "command.h"

#include "rank_exec.h"

namespace kolo::launcher {

const char* launcher_name(Launcher launcher) {
  return launcher == Launcher::Srun ? "srun" : "mpirun";
}

Launcher choose_launcher(const LaunchOptions& options, const Environment& env) {
  switch (options.launcher) {
    case LauncherChoice::Mpirun: return Launcher::Mpirun;
    case LauncherChoice::Srun: return Launcher::Srun;
    case LauncherChoice::Auto: break;
  }
  return find_variable(env, "SLURM_JOB_ID") ? Launcher::Srun : Launcher::Mpirun;
}

LaunchCommand build_command(const LaunchOptions& options, const std::vector<HostSlots>& hosts,
                            const LaunchContext& context) {
  return choose_launcher(options, context.environment) == Launcher::Srun
             ? build_srun_command(options, hosts, context)
             : build_mpirun_command(options, hosts, context);
}

bool user_sets_mca_parameter(const LaunchOptions& options, const Environment& env, std::string_view name) {
  if (find_variable(env, "OMPI_MCA_" + std::string(name))) return true;
  // The word after --mca (or -mca, --gmca), or OMPI_MCA_<name>=... given with -x.
  const std::vector<std::string>& args = options.mpi_args;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const bool mca = args[i] == "--mca" || args[i] == "-mca" || args[i] == "--gmca" || args[i] == "-gmca";
    if (mca && i + 1 < args.size() && args[i + 1] == name) return true;
    if (args[i].rfind("OMPI_MCA_" + std::string(name) + "=", 0) == 0) return true;
  }
  return false;
}

std::vector<std::string> rank_command(const LaunchOptions& options, const LaunchContext& context) {
  std::vector<std::string> argv = {context.kolorun_path, kRankExecFlag};
  argv.insert(argv.end(), options.command.begin(), options.command.end());
  return argv;
}

std::string shell_quote(const std::string& word) {
  static const std::string plain =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=/.,:@%^";
  if (!word.empty() && word.find_first_not_of(plain) == std::string::npos) return word;
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string format_command(const LaunchCommand& command) {
  std::string line;
  auto add = [&line](const std::string& word) {
    if (!line.empty()) line += ' ';
    line += word;
  };
  if (!command.unset.empty() || !command.set.empty()) {
    add("env");
    for (const std::string& name : command.unset) add("-u " + shell_quote(name));
    for (const EnvVar& var : command.set) add(shell_quote(var.name + "=" + var.value));
  }
  for (const std::string& word : command.argv) add(shell_quote(word));
  return line;
}

}  // namespace kolo::launcher
