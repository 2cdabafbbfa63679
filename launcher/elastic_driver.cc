#include "elastic_driver.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>

#include "bounded_run.h"
#include "environment.h"
#include "gloo_launch.h"
#include "job_output.h"
#include "kolo/check.h"
#include "rendezvous/server.h"
#include "worker_pool.h"

namespace kolo::launcher {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::seconds kDiscoveryPeriod{1};  // as horovodrun polls its script
constexpr std::chrono::seconds kDiscoveryBound{10};  // a script still running after this is killed
// An elastic worker's negotiation timeout unless the user sets one: how soon the survivors
// of a worker whose link was cut notice (Horovod's HOROVOD_GLOO_TIMEOUT_SECONDS default).
constexpr const char* kElasticControlTimeout = "30";

Clock::time_point after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

BoundedRun start_discovery(const std::string& script, const Environment& env) {
  BoundedRun run;
  run.process = spawn_launcher({"/bin/sh", "-c", script}, env, Terminal::Detached);
  return run;
}

// A run of the discovery script that has ended (end_run: killed at its bound if it had
// not); its standard output, or kolo::Error (IoError) saying why not.
std::string discovered(BoundedRun& run, const std::string& script) {
  end_run(run);
  KOLO_CHECK(run.exited, StatusCode::IoError,
             "kolorun: --host-discovery-script '" + script + "' did not finish within " +
                 std::to_string(kDiscoveryBound.count()) + " s");
  KOLO_CHECK(run.ended.code == 0, StatusCode::IoError,
             "kolorun: --host-discovery-script '" + script + "' failed (" + run.ended.describe() + ")" +
                 (run.err.empty() ? "" : ": " + run.err.substr(0, run.err.find('\n'))));
  return run.out;
}

// Runs the discovery script to its end, within its bound.
std::string run_discovery(const std::string& script, const Environment& env) {
  std::vector<BoundedRun> runs{start_discovery(script, env)};
  watch(runs, Clock::now() + kDiscoveryBound);
  return discovered(runs[0], script);
}

class ElasticJob final : public rendezvous::Membership {
 public:
  ElasticJob(const LaunchOptions& options, const std::vector<HostSlots>& hosts, const LaunchContext& context)
      : options_(options), context_(context), fixed_hosts_(hosts), secret_(rendezvous::make_secret()),
        output_({std::max(options.num_ranks, options.max_np.value_or(0)), options.output_filename, options.verbose}),
        pool_(output_), random_(std::random_device{}()) {}
  ~ElasticJob() override {
    for (BoundedRun& run : discovery_) end_run(run);  // not left running if run() throws
  }

  int run();

  // ---- the server's thread ----
  rendezvous::Answer place(const std::string& host, int slot, int64_t after_round) override {
    std::lock_guard<std::mutex> lock(mutex_);
    Worker* w = worker_at(host, slot);
    if (w == nullptr) return {rendezvous::Status::Gone, "kolorun runs no worker " + host + ":" + std::to_string(slot)};
    if (!w->gone_why.empty()) return {rendezvous::Status::Gone, w->gone_why};
    if (w->rank >= 0 && after_round < round_) return {rendezvous::Status::Ok, rendezvous::to_text({round_, w->rank, size_})};
    if (!finished_by_.empty()) {  // it leaves; whatever its exit, it is no failure
      w->gone_why = "the job has finished: " + finished_by_;
      return {rendezvous::Status::Gone, w->gone_why};
    }
    if (w->rank >= 0) w->wants_next = true;  // it has left this round: a reset
    return {rendezvous::Status::Missing, ""};
  }
  rendezvous::Answer hosts_changed(const std::string&, int, int64_t round) override {
    std::lock_guard<std::mutex> lock(mutex_);
    const bool changed = round < round_ || hosts_version_ > round_hosts_version_;
    return {rendezvous::Status::Ok, changed ? "1" : "0"};
  }

 private:
  struct Worker {
    std::string host;
    int slot = 0;
    size_t process = 0;        // in pool_
    bool alive = true;         // its process has not exited
    int64_t joined_round = 0;  // the first round it was part of
    int rank = -1;             // in the current round; -1: not in it
    bool wants_next = false;   // asked for a place after the current round
    std::string gone_why;      // not part of the job any more: what it is told
    bool accounted = false;    // its exit has been reported
  };

  // The running worker in a slot. Under mutex_.
  Worker* worker_at(const std::string& host, int slot) {
    for (auto it = workers_.rbegin(); it != workers_.rend(); ++it)
      if (it->host == host && it->slot == slot && it->alive) return &*it;
    return nullptr;
  }
  bool blacklisted(const std::string& host) const {
    auto it = blacklist_.find(host);
    return it != blacklist_.end() && (!it->second || Clock::now() < *it->second);
  }
  bool blacklisted_for_good(const std::string& host) const {
    auto it = blacklist_.find(host);
    return it != blacklist_.end() && !it->second;
  }
  bool usable(const Worker& w) const {
    if (blacklisted(w.host)) return false;
    return std::any_of(hosts_.begin(), hosts_.end(),
                       [&](const HostSlots& h) { return h.host == w.host && w.slot < h.slots.value_or(1); });
  }
  void blacklist(const std::string& host, const std::string& why);
  void discover(bool force);
  void pump();
  bool round_over();
  bool reset_due();
  std::vector<size_t> not_rejoined();
  // Survivors of the round (longest-serving first) and free slots. Under mutex_; marks the
  // workers on hosts that are gone.
  std::pair<std::vector<Worker*>, std::vector<std::pair<std::string, int>>> candidates();
  std::optional<int> form_round();
  void start_worker(const GlooWorker& place, const std::vector<GlooWorker>& round);
  int end_job(int code, const std::string& why);

  const LaunchOptions& options_;
  const LaunchContext& context_;
  const std::vector<HostSlots> fixed_hosts_;
  const rendezvous::Secret secret_;
  JobOutput output_;
  WorkerPool pool_;
  std::mt19937_64 random_;
  std::unique_ptr<rendezvous::Server> server_;
  std::string address_;

  std::mutex mutex_;  // what the server's thread reads: workers_, round_, size_, the versions
  std::vector<Worker> workers_;
  int64_t round_ = 0;
  int size_ = 0;
  int64_t hosts_version_ = 0, round_hosts_version_ = 0;
  // Set once a worker of the round has exited 0: as horovodrun's driver, kolorun then forms
  // no other round (the program has finished), and the workers that ask are told to leave.
  std::string finished_by_;

  // kolorun's thread only.
  std::vector<HostSlots> hosts_;
  std::map<std::string, std::optional<Clock::time_point>> blacklist_;  // nullopt: for good
  std::set<std::string> back_after_cooldown_;
  std::map<std::string, int> times_blacklisted_;  // per host, for the cooldown's backoff
  Clock::time_point next_discovery_ = Clock::now();
  std::vector<BoundedRun> discovery_;  // the script's run under way, if any (one at most)
  Clock::time_point discovery_gives_up_;
  std::optional<Clock::time_point> reset_began_;
  int resets_ = 0;
  int failures_in_round_ = 0;  // workers of the current round that exited with an error
  std::set<std::string> round_hosts_;  // the hosts of the current round's workers
  int interrupted_by_ = 0;
  bool ending_ = false;  // end_job() is stopping the workers: their exits are no failures
  bool kill_now_ = false;  // a signal came while ending_: the workers' grace is over
};

void ElasticJob::blacklist(const std::string& host, const std::string& why) {
  std::optional<Clock::time_point> until;
  std::string how_long = "for the rest of the job";
  if (options_.blacklist_cooldown) {
    auto it = blacklist_.find(host);
    if (it != blacklist_.end() && it->second && Clock::now() < *it->second) return;  // in its cooldown already
    const auto [low, high] = *options_.blacklist_cooldown;
    const double s =
        cooldown_seconds(low, high, ++times_blacklisted_[host], std::uniform_real_distribution<double>(0, 1)(random_));
    until = after(s);
    char text[64];
    std::snprintf(text, sizeof text, "for %.1f s", s);
    how_long = text;
  }
  blacklist_[host] = until;
  back_after_cooldown_.erase(host);
  std::fprintf(stderr, "kolorun: host %s blacklisted %s (%s)\n", host.c_str(), how_long.c_str(), why.c_str());
}

// The first discovery (force) runs to its end here. Later ones are started, then looked at
// on each pass of kolorun's loop without waiting, so that the loop echoes output, collects
// exits and hears signals while a slow script runs (horovodrun's driver runs it on a thread
// of its own); end_job() kills one still running. A script's failure is thrown from the
// call that finds it.
void ElasticJob::discover(bool force) {
  std::vector<HostSlots> now = fixed_hosts_;
  const std::string& script = options_.host_discovery_script;
  if (!script.empty()) {
    std::string output;
    if (force) {
      next_discovery_ = Clock::now() + kDiscoveryPeriod;
      output = run_discovery(script, context_.environment);
    } else if (discovery_.empty()) {
      if (Clock::now() < next_discovery_) return;
      discovery_.push_back(start_discovery(script, context_.environment));
      discovery_gives_up_ = Clock::now() + kDiscoveryBound;
      return;
    } else {
      watch(discovery_, Clock::now());  // what is there, without waiting
      if (!finished(discovery_[0]) && Clock::now() < discovery_gives_up_) return;
      BoundedRun run = std::move(discovery_[0]);
      discovery_.clear();
      next_discovery_ = Clock::now() + kDiscoveryPeriod;
      output = discovered(run, script);
    }
    now = parse_discovered_hosts(output, options_.slots_per_host.value_or(1));
  } else {
    if (!force && Clock::now() < next_discovery_) return;
    next_discovery_ = Clock::now() + kDiscoveryPeriod;
    if (now.empty()) now = {{"localhost", std::max(options_.num_ranks, options_.max_np.value_or(0))}};
  }
  // The same hosts in another order are no change (a script may list them as it likes).
  const auto slots_by_host = [](const std::vector<HostSlots>& hosts) {
    std::map<std::string, std::optional<int>> slots;
    for (const HostSlots& h : hosts) slots[h.host] = h.slots;
    return slots;
  };
  bool changed = slots_by_host(now) != slots_by_host(hosts_);
  // A blacklisted host whose cooldown has ended is a host that came back.
  for (const auto& [host, until] : blacklist_)
    if (until && Clock::now() >= *until && back_after_cooldown_.insert(host).second) {
      changed = true;
      std::fprintf(stderr, "kolorun: host %s is back after its blacklist cooldown\n", host.c_str());
    }
  hosts_ = std::move(now);
  if (changed && round_ > 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++hosts_version_;
  }
}

// Starts the worker that takes `place` in the round being formed (`round`: every place of it).
void ElasticJob::start_worker(const GlooWorker& place, const std::vector<GlooWorker>& round) {
  const int label = int(workers_.size());
  const GlooWorker w{label, place.host, place.slot};
  std::vector<EnvVar> variables = worker_variables(w, options_, address_, server_->port(), secret_);
  const std::vector<EnvVar> horovod_place = horovod_place_variables(place, round);
  variables.insert(variables.end(), horovod_place.begin(), horovod_place.end());
  variables.push_back({"KOLO_ELASTIC", "1"});
  // A worker waits for its place while kolorun waits for the others to re-join and then
  // for --min-np slots: each up to --elastic-timeout.
  variables.push_back({"KOLO_ELASTIC_TIMEOUT", std::to_string(int(2 * options_.elastic_timeout_seconds) + 30)});
  if (!find_variable(context_.environment, "KOLO_CONTROL_TIMEOUT_SECONDS") &&
      !find_variable(context_.environment, "HOROVOD_CONTROL_TIMEOUT_SECONDS"))
    variables.push_back({"KOLO_CONTROL_TIMEOUT_SECONDS", kElasticControlTimeout});
  const std::vector<std::string> argv = worker_argv(w, options_, variables, context_);
  if (options_.verbose) std::fprintf(stderr, "kolorun: worker %d on %s:%d\n", label, place.host.c_str(), place.slot);
  Worker worker;
  worker.host = place.host;
  worker.slot = place.slot;
  worker.process = pool_.start(argv, apply_changes(context_.environment, {}, variables), label);
  worker.joined_round = round_;
  worker.rank = place.rank;
  workers_.push_back(std::move(worker));
}

void ElasticJob::pump() {
  for (int sig : pool_.pump(std::chrono::milliseconds(100))) {
    if (!interrupted_by_) interrupted_by_ = sig;
    else if (ending_ && !kill_now_) {  // a second Ctrl-C while the workers end: no more waiting, as under mpirun
      std::fprintf(stderr, "kolorun: signal %d again: killing the job now\n", sig);
      kill_now_ = true;
    }
  }
  // Exits: a worker of the round that failed starts a reset without it.
  for (size_t i = 0; i < workers_.size(); ++i) {
    Worker& w = workers_[i];
    const std::optional<ProcessExit>& ended = pool_.ended(w.process);
    if (!ended || w.accounted) continue;
    w.accounted = true;
    bool failed_in_round = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      w.alive = false;
      const bool in_round = w.rank >= 0 && w.gone_why.empty() && !ending_;
      failed_in_round = in_round && ended->code != 0;
      if (failed_in_round) w.rank = -1;
      if (in_round && ended->code == 0 && finished_by_.empty())
        finished_by_ = "worker " + std::to_string(i) + " (on " + w.host + ") of round " + std::to_string(round_) +
                       " exited 0";
    }
    if (!failed_in_round) continue;
    ++failures_in_round_;
    std::fputs(describe_worker_failure(int(i), w.host, *ended, output_).c_str(), stderr);
    blacklist(w.host, "its worker " + ended->describe());
    if (finished_by_.empty()) std::fprintf(stderr, "kolorun: the job goes on without it\n");
    reset_began_ = reset_began_.value_or(Clock::now());
  }
}

// Once a worker of the round has finished, whether every other has ended too (or been
// told to leave: end_job() stops it if it is still going).
bool ElasticJob::round_over() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (finished_by_.empty()) return false;
  return std::none_of(workers_.begin(), workers_.end(),
                      [](const Worker& w) { return w.rank >= 0 && w.alive && w.gone_why.empty(); });
}

bool ElasticJob::reset_due() {
  if (reset_began_) return true;
  std::lock_guard<std::mutex> lock(mutex_);
  return std::any_of(workers_.begin(), workers_.end(), [](const Worker& w) { return w.rank >= 0 && w.wants_next; });
}

std::vector<size_t> ElasticJob::not_rejoined() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<size_t> waiting;
  for (size_t i = 0; i < workers_.size(); ++i)
    if (workers_[i].rank >= 0 && !workers_[i].wants_next && workers_[i].alive) waiting.push_back(i);
  return waiting;
}

std::pair<std::vector<ElasticJob::Worker*>, std::vector<std::pair<std::string, int>>> ElasticJob::candidates() {
  std::vector<Worker*> members;
  for (Worker& w : workers_) {
    if (!w.alive || !w.gone_why.empty()) continue;
    if (!usable(w)) {
      w.gone_why = "its host " + w.host + " is no longer one of the job's usable hosts";
      w.rank = -1;
      continue;
    }
    members.push_back(&w);
  }
  std::stable_sort(members.begin(), members.end(), [](const Worker* a, const Worker* b) {
    return std::pair(a->joined_round, a->rank < 0 ? INT32_MAX : a->rank) <
           std::pair(b->joined_round, b->rank < 0 ? INT32_MAX : b->rank);
  });
  std::vector<std::pair<std::string, int>> free;
  for (const HostSlots& h : hosts_) {
    if (blacklisted(h.host)) continue;
    for (int slot = 0; slot < h.slots.value_or(1); ++slot)
      if (worker_at(h.host, slot) == nullptr) free.emplace_back(h.host, slot);
  }
  return {members, free};
}

std::optional<int> ElasticJob::form_round() {
  // As horovodrun's driver: a program that failed on every worker of a round (which has at
  // least one), or on every host, fails the job, whatever hosts may come.
  if (round_ >= 1 && failures_in_round_ == size_)
    return end_job(1, "every worker of round " + std::to_string(round_) + " failed");
  if (round_ >= 1 && std::all_of(round_hosts_.begin(), round_hosts_.end(),
                                 [&](const std::string& host) { return blacklisted_for_good(host); }))
    return end_job(1, "every host of round " + std::to_string(round_) + " is blacklisted for good");
  if (round_ >= 1 && options_.reset_limit && ++resets_ > *options_.reset_limit)
    return end_job(1, "the job has re-formed " + std::to_string(*options_.reset_limit) + " times (--reset-limit " +
                          std::to_string(*options_.reset_limit) + ") and would have to again");
  // horovodrun's rules (its driver's, which its integration tests check): the job starts
  // once -np slots are usable, and goes on while --min-np (by default -np) are; each round
  // takes every usable slot, up to --max-np if given.
  const int min_np = round_ == 0 ? options_.num_ranks : options_.min_np.value_or(options_.num_ranks);
  const char* min_flag = round_ == 0 ? "-np" : "--min-np";
  const int target = options_.max_np.value_or(std::numeric_limits<int>::max());
  const auto give_up = after(options_.elastic_timeout_seconds);
  bool said_waiting = false;
  for (;;) {  // enough slots for --min-np, or --elastic-timeout
    int can_have = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto [members, free] = candidates();
      can_have = int(members.size() + free.size());
    }
    if (can_have >= min_np) break;
    if (!said_waiting) {
      std::fprintf(stderr,
                   "kolorun: %d usable worker slots, fewer than %s %d: waiting up to --elastic-timeout %g s "
                   "for hosts\n",
                   can_have, min_flag, min_np, options_.elastic_timeout_seconds);
      said_waiting = true;
    }
    // run() ends the job (a worker that finished while the others waited here: no round).
    if (interrupted_by_ || !finished_by_.empty()) return std::nullopt;
    const bool hosts_may_come = !options_.host_discovery_script.empty() || options_.blacklist_cooldown;
    if (Clock::now() >= give_up || !hosts_may_come)
      return end_job(1, "only " + std::to_string(can_have) + " worker slots are usable, fewer than " + min_flag +
                            " " + std::to_string(min_np) + (hosts_may_come ? ", after waiting --elastic-timeout " +
                                                                  std::to_string(int(options_.elastic_timeout_seconds)) +
                                                                  " s for hosts"
                                                            : ", and no host can come back (no --host-discovery-script, "
                                                              "no --blacklist-cooldown-range)"));
    pump();
    try {
      discover(false);
    } catch (const Error& e) {
      std::fprintf(stderr, "%s (the hosts stay as they were)\n", e.what());
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  auto [members, free] = candidates();
  ++round_;
  for (Worker& w : workers_) w.rank = -1, w.wants_next = false;
  std::vector<GlooWorker> round;  // the survivors first, then the workers started for free slots
  for (Worker* w : members) {
    w->rank = int(round.size());
    round.push_back({w->rank, w->host, w->slot});
  }
  const size_t survivors = round.size();
  for (const auto& [host, slot] : free)
    if (int(round.size()) < target) round.push_back({int(round.size()), host, slot});
  for (size_t i = survivors; i < round.size(); ++i) start_worker(round[i], round);  // invalidates members
  size_ = int(round.size());
  failures_in_round_ = 0;
  round_hosts_.clear();
  for (const GlooWorker& w : round) round_hosts_.insert(w.host);
  round_hosts_version_ = hosts_version_;
  reset_began_.reset();
  if (round_ > 1) server_->forget("round" + std::to_string(round_ - 1) + "/");
  std::fprintf(stderr, "kolorun: round %lld: %d workers%s\n", static_cast<long long>(round_), size_,
               round_ > 1 ? " (the job re-formed)" : "");
  return std::nullopt;
}

int ElasticJob::end_job(int code, const std::string& why) {
  if (!why.empty()) std::fprintf(stderr, "kolorun: %s; ending the job\n", why.c_str());
  ending_ = true;
  for (BoundedRun& run : discovery_) end_run(run);  // a script still running is the job's too
  discovery_.clear();
  pool_.signal_all(SIGTERM);
  const auto kill_at = after(options_.kill_grace_seconds);
  while (pool_.any_running() && Clock::now() < kill_at && !kill_now_) pump();
  pool_.signal_all(SIGKILL);
  while (pool_.any_running()) pump();
  output_.finish();
  return code;
}

int ElasticJob::run() {
  std::signal(SIGPIPE, SIG_IGN);
  discover(true);
  std::vector<GlooWorker> every_host;
  for (const HostSlots& h : hosts_) every_host.push_back({0, h.host, 0});
  address_ = server_address(every_host, options_, context_.environment);
  server_ = std::make_unique<rendezvous::Server>(secret_, *this);
  if (options_.verbose)
    std::fprintf(stderr, "kolorun: elastic job, rendezvous at %s:%d\n", address_.c_str(), server_->port());
  if (std::optional<int> failed = form_round()) return *failed;
  const auto elastic_timeout = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(options_.elastic_timeout_seconds));
  for (;;) {
    pump();
    if (interrupted_by_) {
      end_job(0, "");
      std::fprintf(stderr, "kolorun: job stopped (kolorun got SIG%s)\n", sigabbrev_np(interrupted_by_));
      return 128 + interrupted_by_;
    }
    if (round_over()) {  // workers told to leave, if any, go too
      if (failures_in_round_ == 0) return end_job(0, "");
      return end_job(1, std::to_string(failures_in_round_) + " worker(s) of round " + std::to_string(round_) +
                            " failed before it finished");
    }
    // As horovodrun, kolorun waits for the round's other workers however long their own
    // code runs (a final evaluation on rank 0, say); a worker that asks for a next round
    // is told to leave at once.
    if (!finished_by_.empty()) continue;
    try {
      discover(false);
    } catch (const Error& e) {
      std::fprintf(stderr, "%s (the hosts stay as they were)\n", e.what());
    }
    if (!reset_due()) continue;
    reset_began_ = reset_began_.value_or(Clock::now());
    // Every worker of the round asks for its next place, or ends; one that does neither
    // within --elastic-timeout (hung, or cut off) is dropped.
    const std::vector<size_t> waiting = not_rejoined();
    if (!waiting.empty() && Clock::now() < *reset_began_ + elastic_timeout) continue;
    for (size_t i : waiting) {
      Worker& w = workers_[i];
      std::fprintf(stderr, "kolorun: worker %zu (on %s) did not re-join within --elastic-timeout: dropping it\n", i,
                   w.host.c_str());
      {
        std::lock_guard<std::mutex> lock(mutex_);
        w.gone_why = "it did not re-join within --elastic-timeout";
        w.rank = -1;
      }
      blacklist(w.host, "its worker did not re-join");
      pool_.signal(w.process, SIGKILL);
    }
    if (std::optional<int> failed = form_round()) return *failed;
  }
}

}  // namespace

double cooldown_seconds(double low, double high, int n, double fraction) {
  return std::clamp(std::ldexp(low, std::min(n, 30)) + fraction * low, low, high);
}

std::vector<HostSlots> parse_discovered_hosts(const std::string& text, int default_slots) {
  std::vector<HostSlots> hosts;
  std::istringstream lines(text);
  int number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    line = line.substr(0, line.find('#'));
    line.erase(0, line.find_first_not_of(" \t\r"));
    line.erase(line.find_last_not_of(" \t\r") + 1);
    if (line.empty()) continue;
    std::vector<HostSlots> one = parse_host_list(line);  // checks the name and the slots
    KOLO_CHECK(one.size() == 1, StatusCode::InvalidArgument,
               "kolorun: the host discovery script's line " + std::to_string(number) + " '" + line +
                   "' is not one host: expected 'host' or 'host:slots'");
    if (line.find(':') == std::string::npos) one[0].slots = default_slots;
    KOLO_CHECK(std::none_of(hosts.begin(), hosts.end(), [&](const HostSlots& h) { return h.host == one[0].host; }),
               StatusCode::InvalidArgument,
               "kolorun: the host discovery script lists " + one[0].host + " twice");
    hosts.push_back(one[0]);
  }
  return hosts;
}

int run_elastic_job(const LaunchOptions& options, const std::vector<HostSlots>& hosts, const LaunchContext& context) {
  ElasticJob job(options, hosts, context);
  return job.run();
}

}  // namespace kolo::launcher
