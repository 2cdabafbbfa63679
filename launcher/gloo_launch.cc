#include "gloo_launch.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <map>

#include "environment.h"
#include "job_output.h"
#include "kolo/check.h"
#include "rank_exec.h"
#include "remote_kill.h"
#include "rendezvous/server.h"
#include "signal_pipe.h"
#include "spawn_launcher.h"

namespace kolo::launcher {
namespace {

using Clock = std::chrono::steady_clock;

// A job without elastic flags: one round, its places fixed at the start.
class FixedMembership final : public rendezvous::Membership {
 public:
  explicit FixedMembership(const std::vector<GlooWorker>& workers) : size_(int(workers.size())) {
    for (const GlooWorker& w : workers) rank_of_[{w.host, w.slot}] = w.rank;
  }
  rendezvous::Answer place(const std::string& host, int slot, int64_t after_round) override {
    auto it = rank_of_.find({host, slot});
    if (it == rank_of_.end())
      return {rendezvous::Status::Gone, "kolorun started no worker " + host + ":" + std::to_string(slot)};
    if (after_round >= 1)
      return {rendezvous::Status::Gone,
              "this job does not re-form after a failure (kolorun without --min-np/--max-np)"};
    return {rendezvous::Status::Ok, rendezvous::to_text({1, it->second, size_})};
  }

 private:
  int size_;
  std::map<std::pair<std::string, int>, int> rank_of_;
};

struct Running {
  GlooWorker worker;
  SpawnedLauncher process;
  std::optional<int> exit_code;  // 128 + signal when killed
};

// Where the workers reach kolorun: the loopback address when they all run here, else this
// host's name (or KOLO_GLOO_RENDEZVOUS_ADDR from kolorun's environment).
std::string server_address(const std::vector<GlooWorker>& workers, const Environment& env) {
  if (auto given = find_variable(env, "KOLO_GLOO_RENDEZVOUS_ADDR"); given && !given->empty()) return *given;
  for (const GlooWorker& w : workers)
    if (!is_this_host(w.host)) return this_host_name();
  return "127.0.0.1";
}

std::vector<std::string> worker_argv(const GlooWorker& worker, const LaunchOptions& options,
                                     const std::vector<EnvVar>& variables, const LaunchContext& context) {
  if (is_this_host(worker.host)) return options.command;
  // On another host: one command line for the agent's shell, with the variables and this
  // folder (as mpirun gives its ranks kolorun's working directory).
  std::string line = "cd " + shell_quote(std::filesystem::current_path().string()) + " && env";
  for (const EnvVar& v : variables) line += " " + shell_quote(v.name + "=" + v.value);
  for (const std::string& word : options.command) line += " " + shell_quote(word);
  std::vector<std::string> argv = remote_agent(options, context.environment);
  argv.push_back(worker.host);
  argv.push_back(line);
  return argv;
}

// Splits a chunk of a worker's output into JobOutput's pieces: whole lines, then what is
// left of an unfinished one.
void add_output(JobOutput& output, Stream stream, int rank, std::string_view bytes) {
  for (;;) {
    const size_t newline = bytes.find('\n');
    if (newline == std::string_view::npos) break;
    output.add(stream, {rank, std::string(bytes.substr(0, newline)), true});
    bytes.remove_prefix(newline + 1);
  }
  if (!bytes.empty()) output.add(stream, {rank, std::string(bytes), false});
}

int exit_status_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

std::string how_it_ended(int code) {
  if (code > 128) return std::string("was killed by SIG") + sigabbrev_np(code - 128);
  return "exited with code " + std::to_string(code);
}

}  // namespace

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
  const std::string address = server_address(workers, context.environment);
  if (options.verbose)
    std::fprintf(stderr, "kolorun: rendezvous for %d Gloo workers at %s:%d\n", options.num_ranks, address.c_str(),
                 server.port());

  JobOutput output({options.num_ranks, options.output_filename, options.verbose});
  SignalPipe signals;
  std::vector<Running> running;
  for (const GlooWorker& w : workers) {
    std::vector<EnvVar> variables = variables_from_flags(options);
    variables.insert(variables.end(), {{"KOLO_GLOO_RENDEZVOUS_ADDR", address},
                                       {"KOLO_GLOO_RENDEZVOUS_PORT", std::to_string(server.port())},
                                       {"KOLO_GLOO_SECRET", rendezvous::secret_to_hex(secret)},
                                       {"KOLO_HOSTNAME", w.host},
                                       {"KOLO_LOCAL_RANK", std::to_string(w.slot)}});
    const std::vector<std::string> argv = worker_argv(w, options, variables, context);
    if (options.verbose) std::fprintf(stderr, "kolorun: rank %d: %s\n", w.rank, format_command({{}, {}, {}, argv}).c_str());
    running.push_back({w, spawn_launcher(argv, apply_changes(context.environment, {}, variables)), std::nullopt});
  }

  std::optional<size_t> first_failure;
  std::optional<Clock::time_point> kill_at;
  int interrupted_by = 0;
  auto signal_all = [&](int sig) {
    for (Running& r : running)
      if (!r.exit_code) ::kill(-r.process.pid, sig);  // its own process group: ours to end
  };
  for (;;) {
    std::vector<pollfd> polled{{signals.fd(), POLLIN, 0}};
    std::vector<std::pair<size_t, Stream>> owner;
    for (size_t i = 0; i < running.size(); ++i) {
      for (auto [fd, stream] : {std::pair{&running[i].process.out_fd, Stream::Stdout},
                                std::pair{&running[i].process.err_fd, Stream::Stderr}}) {
        if (*fd < 0) continue;
        polled.push_back({*fd, POLLIN, 0});
        owner.emplace_back(i, stream);
      }
    }
    const bool all_exited = std::all_of(running.begin(), running.end(), [](const Running& r) { return r.exit_code.has_value(); });
    if (all_exited && polled.size() == 1) break;
    ::poll(polled.data(), polled.size(), 100);
    for (size_t p = 1; p < polled.size(); ++p) {
      if (!polled[p].revents) continue;
      auto [i, stream] = owner[p - 1];
      int& fd = stream == Stream::Stdout ? running[i].process.out_fd : running[i].process.err_fd;
      char buffer[65536];
      const ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n > 0) {
        add_output(output, stream, running[i].worker.rank, std::string_view(buffer, size_t(n)));
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        ::close(fd);
        fd = -1;
      }
    }
    output.flush();
    for (int sig : signals.take()) {
      if (sig == SIGCHLD) continue;
      if (!interrupted_by) {
        interrupted_by = sig;
        signal_all(SIGTERM);
        kill_at = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(options.kill_grace_seconds));
      }
    }
    for (size_t i = 0; i < running.size(); ++i) {
      Running& r = running[i];
      int status = 0;
      if (r.exit_code || ::waitpid(r.process.pid, &status, WNOHANG) != r.process.pid) continue;
      r.exit_code = exit_status_of(status);
      if (*r.exit_code != 0 && !first_failure && !interrupted_by) {
        first_failure = i;
        kill_at = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(options.kill_after_failure_seconds));
      }
    }
    if (kill_at && Clock::now() >= *kill_at) {
      signal_all(SIGKILL);
      kill_at.reset();
    }
  }
  output.finish();
  if (interrupted_by) {
    std::fprintf(stderr, "kolorun: job stopped (kolorun got SIG%s)\n", sigabbrev_np(interrupted_by));
    return 128 + interrupted_by;
  }
  if (!first_failure) return 0;
  const Running& failed = running[*first_failure];
  std::string report = "kolorun: rank " + std::to_string(failed.worker.rank) + " (on " + failed.worker.host + ") " +
                       how_it_ended(*failed.exit_code) + "; its last lines:\n";
  for (const std::string& line : output.tail(failed.worker.rank))
    report += "  [" + std::to_string(failed.worker.rank) + "]" + line + "\n";
  std::fputs(report.c_str(), stderr);
  return *failed.exit_code;
}

}  // namespace kolo::launcher
