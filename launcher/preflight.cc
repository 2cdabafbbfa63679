#include "preflight.h"

#include <netdb.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <limits>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

#include "gloo_launch.h"
#include "kolo/kolo.h"
#include "rank_exec.h"

namespace kolo::launcher {
namespace {

[[noreturn]] void fail(const std::string& message) {
  throw Error(StatusCode::InvalidArgument, "kolorun: " + message);
}

bool is_executable_file(const std::string& path) {
  struct stat info = {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
         ::access(path.c_str(), X_OK) == 0;
}

std::string path_variable(const Environment& env) {
  return find_variable(env, "PATH").value_or("/usr/local/bin:/usr/bin:/bin");
}

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

std::string find_executable(const std::string& program, const Environment& env) {
  if (program.find('/') != std::string::npos) return is_executable_file(program) ? program : "";
  std::stringstream dirs(path_variable(env));
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    if (is_executable_file(candidate)) return candidate;
  }
  return "";
}

void check_program(const std::string& program, const Environment& env) {
  if (!find_executable(program, env).empty()) return;
  if (program.find('/') == std::string::npos)
    fail("program '" + program + "' not found on PATH (" + path_variable(env) + ")");
  struct stat info = {};
  if (::stat(program.c_str(), &info) != 0) fail("program '" + program + "' does not exist");
  if (S_ISDIR(info.st_mode)) fail("program '" + program + "' is a directory");
  fail("program '" + program + "' is not executable (chmod +x, or run it through its interpreter)");
}

void check_launcher_program(const LaunchCommand& command, const Environment& env) {
  const std::string& program = command.argv.at(0);
  if (!find_executable(program, env).empty()) return;
  if (command.launcher == Launcher::Srun)
    fail("srun not found on PATH, but this is a SLURM allocation (SLURM_JOB_ID is set); "
         "use --launcher mpirun to start the job with mpirun instead");
  if (find_variable(env, "KOLO_MPIRUN"))
    fail("KOLO_MPIRUN='" + program + "' is not an executable file");
  fail("mpirun not found on PATH: install Open MPI (Debian: openmpi-bin) or set KOLO_MPIRUN");
}

namespace {

bool oversubscribing(const LaunchOptions& options, const Environment& env) {
  const std::string setting = find_variable(env, "OMPI_MCA_rmaps_base_oversubscribe").value_or("");
  return options.oversubscribe || setting == "1" || setting == "true";
}

// The slots the ranks go on and where they come from, in words for the message
// ("-H node0:4,node1:4"); nullopt when kolorun cannot know them.
struct Slots {
  int count = 0;
  std::string where;
};
std::optional<Slots> known_slots(const LaunchOptions& options, const std::vector<HostSlots>& hosts,
                                 const LaunchContext& context) {
  if (choose_launcher(options, context.environment) == Launcher::Srun) return std::nullopt;
  // The discovery script names the hosts as the job runs (elastic_driver.cc checks them).
  if (!options.host_discovery_script.empty()) return std::nullopt;
  if (hosts.empty())
    return Slots{context.local_cores, "this machine: its " + std::to_string(context.local_cores) +
                                          " cores, as mpirun counts them"};
  const std::optional<int> total = total_slots(hosts);
  if (!total) return std::nullopt;
  return Slots{*total, options.hostfile.empty() ? "-H " + format_host_list(hosts)
                                                : "--hostfile " + options.hostfile + ": " +
                                                      format_host_list(hosts)};
}

}  // namespace

void check_hosts_for_launcher(const LaunchOptions& options, const std::vector<HostSlots>& hosts,
                              const LaunchContext& context) {
  if (options.gloo) {
    if (starts_workers_with_srun(options, context.environment) && hosts.empty() &&
        options.host_discovery_script.empty())
      fail("inside a Slurm allocation, --gloo and elastic jobs start each worker as an srun step on its node: name "
           "the nodes with -H (e.g. -H $(scontrol show hostnames | sed 's/$/:2/' | paste -sd,)) or a "
           "--host-discovery-script");
    if (!options.elastic()) plan_gloo_workers(options.num_ranks, hosts);  // enough slots for -np
    check_network_interface(options);
    return;
  }
  if (choose_launcher(options, context.environment) == Launcher::Srun && !hosts.empty())
    fail("-H/--hostfile cannot be used with srun: srun runs the ranks on the allocation's nodes. Choose nodes with "
         "salloc/sbatch, or use --launcher mpirun.");
}

void check_rank_count(const LaunchOptions& options, const std::vector<HostSlots>& hosts,
                      const LaunchContext& context) {
  const int ranks = options.num_ranks;
  const std::optional<Slots> slots = known_slots(options, hosts, context);
  if (!slots) {
    if (ranks < 1 || ranks > kMaxRanks)
      fail("-np must be between 1 and " + std::to_string(kMaxRanks) +
           " (the launcher checks it against slots kolorun cannot know), not " + std::to_string(ranks));
    return;
  }
  if (!oversubscribing(options, context.environment)) {
    if (ranks < 1 || ranks > slots->count)
      fail("-np must be between 1 and " + std::to_string(slots->count) + " (the slots of " +
           slots->where + "; --oversubscribe allows more), not " + std::to_string(ranks));
    return;
  }
  const long long most = std::min<long long>(static_cast<long long>(slots->count) * kMaxRanksPerSlot,
                                             std::numeric_limits<int>::max());
  if (ranks < 1 || ranks > most)
    fail("-np must be between 1 and " + std::to_string(most) + " (" +
         std::to_string(kMaxRanksPerSlot) + " ranks a slot with --oversubscribe, on the " +
         std::to_string(slots->count) + " slots of " + slots->where + "), not " +
         std::to_string(ranks));
}

void check_hosts_resolve(const std::vector<HostSlots>& hosts, std::chrono::milliseconds bound,
                         UnresolvedHost unresolved_host) {
  // getaddrinfo cannot be cancelled, so it runs on a thread kolorun does not wait for
  // past the bound: a slow resolver delays the launch by `bound` at most.
  using Failures = std::vector<std::pair<std::string, std::string>>;  // (name, reason)
  auto unresolved = std::make_shared<std::promise<Failures>>();
  std::future<Failures> result = unresolved->get_future();
  std::vector<std::string> names;
  for (const HostSlots& host : hosts)
    if (host.host != "localhost" && host.host != this_host_name()) names.push_back(host.host);
  std::thread([names, unresolved] {
    Failures failed;
    for (const std::string& name : names) {
      addrinfo* info = nullptr;
      const int error = ::getaddrinfo(name.c_str(), nullptr, nullptr, &info);
      if (error != 0) failed.emplace_back(name, gai_strerror(error));
      else ::freeaddrinfo(info);
    }
    unresolved->set_value(failed);
  }).detach();
  if (result.wait_for(bound) != std::future_status::ready) {
    std::fprintf(stderr, "kolorun: warning: resolving the host names took over %lld ms; "
                         "going on without checking them\n",
                 static_cast<long long>(bound.count()));
    return;
  }
  const Failures failed = result.get();
  if (failed.empty()) return;
  if (unresolved_host == UnresolvedHost::Warn) {
    for (const auto& [name, reason] : failed)
      std::fprintf(stderr, "kolorun: warning: host '%s' does not resolve on this machine (%s)\n",
                   name.c_str(), reason.c_str());
    return;
  }
  std::string list;
  for (const auto& [name, reason] : failed) list += (list.empty() ? "'" : ", '") + name + "' (" + reason + ")";
  fail("unknown host " + list + ": check -H/--hostfile, or set KOLO_MPIRUN to a wrapper "
       "that knows how to reach it");
}

int local_cores() {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (::sched_getaffinity(0, sizeof(cpus), &cpus) != 0) return std::max(1u, std::thread::hardware_concurrency());
  std::set<std::pair<std::string, std::string>> cores;  // (package, core) pairs
  int threads = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &cpus)) continue;
    ++threads;
    const std::string topology = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    const std::string package = read_first_line(topology + "physical_package_id");
    const std::string core = read_first_line(topology + "core_id");
    if (package.empty() || core.empty()) return threads > 0 ? CPU_COUNT(&cpus) : 1;
    cores.insert({package, core});
  }
  return std::max<int>(1, static_cast<int>(cores.size()));
}

bool running_as_root() { return ::geteuid() == 0; }

std::string this_program_path() {
  std::error_code error;
  const std::filesystem::path path = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::string("kolorun") : path.string();
}

}  // namespace kolo::launcher
