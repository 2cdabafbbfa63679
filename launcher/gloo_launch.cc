#include "gloo_launch.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>

#include "environment.h"
#include "job_output.h"
#include "kolo/check.h"
#include "rank_exec.h"
#include "remote_kill.h"
#include "rendezvous/server.h"
#include "worker_pool.h"

namespace kolo::launcher {
namespace {

using Clock = std::chrono::steady_clock;

// A job without elastic flags: its places fixed at the start. A worker that shuts kolo down
// and starts it again (as Horovod's Gloo mode allows, and its test suite does) takes the
// same place in the job's next round; once a worker has ended there is no next round, nor a
// first one for a late worker: its place would wait for a worker that is gone.
class FixedMembership final : public rendezvous::Membership {
 public:
  explicit FixedMembership(const std::vector<GlooWorker>& workers) : size_(int(workers.size())) {
    for (const GlooWorker& w : workers) rank_of_[{w.host, w.slot}] = w.rank;
  }
  rendezvous::Answer place(const std::string& host, int slot, int64_t after_round) override {
    auto it = rank_of_.find({host, slot});
    if (it == rank_of_.end())
      return {rendezvous::Status::Gone, "kolorun started no worker " + host + ":" + std::to_string(slot)};
    std::lock_guard<std::mutex> lock(mutex_);
    if (!ended_.empty())
      return {rendezvous::Status::Gone, ended_ + ", and this job does not re-form without it (kolorun without "
                                                 "--min-np/--max-np)"};
    return {rendezvous::Status::Ok, rendezvous::to_text({after_round + 1, it->second, size_})};
  }
  // Called from kolorun's loop, which reaps the workers; place() runs on the server's thread.
  void worker_ended(const GlooWorker& w, const ProcessExit& ended) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (ended_.empty())
      ended_ = "rank " + std::to_string(w.rank) + " (" + w.host + ":" + std::to_string(w.slot) + ") has " +
               (ended.code == 0 ? "finished" : ended.describe());
  }

 private:
  int size_;
  std::map<std::pair<std::string, int>, int> rank_of_;
  std::mutex mutex_;
  std::string ended_;  // the first worker to end, said as place() tells the others
};

}  // namespace

namespace {

// This host's IPv4 addresses, by interface: (name, numeric address, prefix length).
struct LocalAddress {
  std::string interface, address;
  uint32_t value = 0;  // host order
  int prefix = 0;
};
std::vector<LocalAddress> local_addresses() {
  std::vector<LocalAddress> found;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return found;
  for (ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET || !a->ifa_netmask) continue;
    const auto* in = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
    const auto* mask = reinterpret_cast<const sockaddr_in*>(a->ifa_netmask);
    char text[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
    found.push_back({a->ifa_name, text, ntohl(in->sin_addr.s_addr), __builtin_popcount(mask->sin_addr.s_addr)});
  }
  ::freeifaddrs(list);
  return found;
}

// The address of `wanted`: an interface's name, or a subnet "10.77.0.0/24" (as
// --network-interface takes either).
std::optional<std::string> address_on(const std::string& wanted, const std::vector<LocalAddress>& addresses) {
  const size_t slash = wanted.find('/');
  for (const LocalAddress& a : addresses) {
    if (slash == std::string::npos) {
      if (a.interface == wanted) return a.address;
      continue;
    }
    in_addr net{};
    if (::inet_pton(AF_INET, wanted.substr(0, slash).c_str(), &net) != 1) continue;
    const int bits = std::atoi(wanted.c_str() + slash + 1);
    const uint32_t mask = bits <= 0 ? 0 : bits >= 32 ? ~0u : ~0u << (32 - bits);
    if ((a.value & mask) == (ntohl(net.s_addr) & mask)) return a.address;
  }
  return std::nullopt;
}

// This host's address on the first of --network-interface's entries ("eth0,eth1" or
// "10.0.0.0/24") it has; nullopt without one.
std::optional<std::string> address_on_chosen_interface(const LaunchOptions& options,
                                                        const std::vector<LocalAddress>& addresses) {
  std::string wanted_list = options.network_interface;
  std::replace(wanted_list.begin(), wanted_list.end(), ',', ' ');
  for (const std::string& wanted : split_on_spaces(wanted_list))
    if (std::optional<std::string> address = address_on(wanted, addresses)) return address;
  return std::nullopt;
}

}  // namespace

std::string server_address(const std::vector<GlooWorker>& workers, const LaunchOptions& options,
                           const Environment& env) {
  if (auto given = find_variable(env, "KOLO_GLOO_RENDEZVOUS_ADDR"); given && !given->empty()) return *given;
  const bool all_here = std::all_of(workers.begin(), workers.end(), [](const GlooWorker& w) { return is_this_host(w.host); });
  if (all_here) return "127.0.0.1";
  const std::vector<LocalAddress> addresses = local_addresses();
  if (std::optional<std::string> address = address_on_chosen_interface(options, addresses)) return *address;
  // (check_network_interface refused, before the launch, interfaces this host lacks.)
  // The first address that is not loopback: the one other hosts can reach, on a host with
  // one network (with several, --network-interface chooses).
  for (const LocalAddress& a : addresses)
    if (a.address.rfind("127.", 0) != 0) return a.address;
  return this_host_name();
}

void check_network_interface(const LaunchOptions& options) {
  if (options.network_interface.empty()) return;
  const std::vector<LocalAddress> addresses = local_addresses();
  if (address_on_chosen_interface(options, addresses)) return;
  // Another address would be one the user ruled out (horovodrun refuses it too).
  std::string have;
  for (const LocalAddress& a : addresses) have += (have.empty() ? "" : ", ") + a.interface + " " + a.address;
  throw Error(StatusCode::InvalidArgument, "kolorun: --network-interface " + options.network_interface +
                                               ": no such interface or subnet on this host (it has " + have + ")");
}

std::vector<EnvVar> worker_variables(const GlooWorker& w, const LaunchOptions& options, const std::string& address,
                                     int port, const rendezvous::Secret& secret) {
  std::vector<EnvVar> variables = variables_from_flags(options);
  variables.insert(variables.end(), {{"KOLO_GLOO_RENDEZVOUS_ADDR", address},
                                     {"KOLO_GLOO_RENDEZVOUS_PORT", std::to_string(port)},
                                     {"KOLO_GLOO_SECRET", rendezvous::secret_to_hex(secret)},
                                     {"KOLO_HOSTNAME", w.host},
                                     {"KOLO_LOCAL_RANK", std::to_string(w.slot)}});
  // An interface by name is Gloo's too (horovodrun sets HOROVOD_GLOO_IFACE from it).
  if (!options.network_interface.empty() && options.network_interface.find('/') == std::string::npos)
    variables.push_back({"KOLO_GLOO_IFACE", options.network_interface.substr(0, options.network_interface.find(','))});
  return variables;
}

std::vector<EnvVar> horovod_place_variables(const GlooWorker& worker, const std::vector<GlooWorker>& workers) {
  std::vector<std::string> hosts;  // in the order of their first rank
  std::map<std::string, int> workers_on;
  std::set<std::pair<std::string, int>> taken;  // (host, slot)
  for (const GlooWorker& w : workers) {
    if (workers_on[w.host]++ == 0) hosts.push_back(w.host);
    taken.emplace(w.host, w.slot);
  }
  int cross_rank = 0, cross_size = 0;
  for (const std::string& host : hosts) {
    if (!taken.count({host, worker.slot})) continue;  // no worker in this slot there
    if (host == worker.host) cross_rank = cross_size;
    ++cross_size;
  }
  return {{"HOROVOD_HOSTNAME", worker.host},
          {"HOROVOD_RANK", std::to_string(worker.rank)},
          {"HOROVOD_SIZE", std::to_string(workers.size())},
          {"HOROVOD_LOCAL_RANK", std::to_string(worker.slot)},
          {"HOROVOD_LOCAL_SIZE", std::to_string(workers_on[worker.host])},
          {"HOROVOD_CROSS_RANK", std::to_string(cross_rank)},
          {"HOROVOD_CROSS_SIZE", std::to_string(cross_size)}};
}

std::string describe_worker_failure(int rank, const std::string& host, const ProcessExit& ended, const JobOutput& output) {
  std::string report = "kolorun: rank " + std::to_string(rank) + " (on " + host + ") " + ended.describe() +
                       "; its last lines:\n";
  for (const std::string& line : output.tail(rank)) report += "  [" + std::to_string(rank) + "]" + line + "\n";
  return report;
}

bool starts_workers_with_srun(const LaunchOptions& options, const Environment& env) {
  return options.launcher != LauncherChoice::Mpirun && find_variable(env, "SLURM_JOB_ID").has_value();
}

std::vector<std::string> worker_argv(const GlooWorker& worker, const LaunchOptions& options,
                                     const std::vector<EnvVar>& variables, const LaunchContext& context) {
  if (starts_workers_with_srun(options, context.environment)) {
    // Inside an allocation: a step of one task on the worker's node, which Slurm starts,
    // watches and ends (--export=ALL carries kolorun's environment, which holds the
    // variables: the caller applies them). A failed worker must not end the others' steps.
    std::vector<std::string> argv = {context.srun, "--nodes=1", "--ntasks=1", "--nodelist=" + worker.host,
                                     "--kill-on-bad-exit=0", "--export=ALL", "--job-name=kolo-worker"};
    argv.insert(argv.end(), options.mpi_args.begin(), options.mpi_args.end());
    argv.insert(argv.end(), options.command.begin(), options.command.end());
    return argv;
  }
  if (is_this_host(worker.host)) return options.command;
  // On another host: one command line for the agent's shell, with this folder (as mpirun
  // gives its ranks kolorun's working directory), the worker's variables, and those of
  // kolorun's environment that mpirun's -x would carry (KOLO_*, HOROVOD_*, NCCL_*, ...).
  std::string line = "cd " + shell_quote(std::filesystem::current_path().string()) + " && env";
  for (const std::string& name : forwarded_variable_names(context.environment, variables))
    line += " " + shell_quote(name + "=" + find_variable(context.environment, name).value_or(""));
  for (const EnvVar& v : variables) line += " " + shell_quote(v.name + "=" + v.value);
  for (const std::string& word : options.command) line += " " + shell_quote(word);
  std::vector<std::string> argv = remote_agent(options, context.environment);
  argv.push_back(worker.host);
  argv.push_back(line);
  return argv;
}

std::vector<GlooWorker> plan_gloo_workers(int num_ranks, const std::vector<HostSlots>& hosts) {
  std::vector<HostSlots> list = hosts.empty() ? std::vector<HostSlots>{{"localhost", num_ranks}} : hosts;
  std::vector<GlooWorker> workers;
  for (const HostSlots& h : list)
    for (int slot = 0; slot < h.slots.value_or(1) && int(workers.size()) < num_ranks; ++slot)
      workers.push_back({int(workers.size()), h.host, slot});
  KOLO_CHECK(int(workers.size()) == num_ranks, StatusCode::InvalidArgument,
             "kolorun: -np " + std::to_string(num_ranks) + " but the hosts have " + std::to_string(workers.size()) +
                 " slots (-H host:slots)");
  return workers;
}

bool is_this_host(const std::string& host) {
  return host == "localhost" || host == "127.0.0.1" || host == "::1" || host == this_host_name();
}

int run_gloo_job(const LaunchOptions& options, const std::vector<HostSlots>& hosts, const LaunchContext& context) {
  std::signal(SIGPIPE, SIG_IGN);
  const std::vector<GlooWorker> workers = plan_gloo_workers(options.num_ranks, hosts);
  const rendezvous::Secret secret = rendezvous::make_secret();
  FixedMembership membership(workers);
  rendezvous::Server server(secret, membership);
  const std::string address = server_address(workers, options, context.environment);
  if (options.verbose)
    std::fprintf(stderr, "kolorun: rendezvous for %d Gloo workers at %s:%d\n", options.num_ranks, address.c_str(),
                 server.port());

  JobOutput output({options.num_ranks, options.output_filename, options.verbose});
  WorkerPool pool(output);
  for (const GlooWorker& w : workers) {
    std::vector<EnvVar> variables = worker_variables(w, options, address, server.port(), secret);
    const std::vector<EnvVar> place = horovod_place_variables(w, workers);
    variables.insert(variables.end(), place.begin(), place.end());
    const std::vector<std::string> argv = worker_argv(w, options, variables, context);
    if (options.verbose) {
      LaunchCommand shown;
      shown.argv = argv;
      std::fprintf(stderr, "kolorun: rank %d: %s\n", w.rank, format_command(shown).c_str());
    }
    pool.start(argv, apply_changes(context.environment, {}, variables), w.rank);
  }

  std::optional<size_t> first_failure;
  Clock::time_point kill_at = Clock::time_point::max();  // when the workers left get SIGKILL
  int interrupted_by = 0;
  auto after = [](double seconds) {
    return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  };
  for (;;) {
    bool all_finished = true;
    for (size_t i = 0; i < pool.count(); ++i) all_finished = all_finished && pool.finished(i);
    if (all_finished) break;
    for (int sig : pool.pump(std::chrono::milliseconds(100))) {
      if (interrupted_by) {  // a second Ctrl-C: no more waiting, as under mpirun
        std::fprintf(stderr, "kolorun: signal %d again: killing the job now\n", sig);
        kill_at = Clock::now();
        continue;
      }
      interrupted_by = sig;
      pool.signal_all(SIGTERM);
      kill_at = after(options.kill_grace_seconds);
    }
    for (size_t i = 0; i < pool.count(); ++i)
      if (const std::optional<ProcessExit>& ended = pool.ended(i)) membership.worker_ended(workers[i], *ended);
    for (size_t i = 0; i < pool.count() && !first_failure && !interrupted_by; ++i) {
      if (!pool.ended(i) || pool.ended(i)->code == 0) continue;
      first_failure = i;
      kill_at = after(options.kill_after_failure_seconds);
    }
    if (Clock::now() >= kill_at) {
      pool.signal_all(SIGKILL);
      kill_at = Clock::time_point::max();
    }
  }
  output.finish();
  if (interrupted_by) {
    std::fprintf(stderr, "kolorun: job stopped (kolorun got SIG%s)\n", sigabbrev_np(interrupted_by));
    return 128 + interrupted_by;
  }
  if (!first_failure) return 0;
  const GlooWorker& failed = workers[*first_failure];
  const ProcessExit& ended = *pool.ended(*first_failure);
  std::fputs(describe_worker_failure(failed.rank, failed.host, ended, output).c_str(), stderr);
  return ended.code;
}

}  // namespace kolo::launcher
