// The scenarios of tests/runtime/scenarios/ over the Gloo transport, in a job that kolorun
// --gloo starts (no mpirun, no MPI): each process is a rank, its Peer the public API and
// real time, and the ranks meet outside kolo through kolorun's rendezvous store.
//
//   kolorun --gloo -np 3 kolo_gloo_scenarios collectives
//   KOLO_DYNAMIC_PROCESS_SETS=1 kolorun --gloo -np 3 kolo_gloo_scenarios process_sets
//   kolorun --gloo -np 2 kolo_gloo_scenarios restart_after_an_exit
//
// Exit status: the number of failed checks on this rank, 3 when it checked nothing (but in
// restart_after_an_exit, whose rank 1 only ends); kolorun reports the first rank that fails.
#include <cstdio>
#include <future>
#include <map>
#include <string>
#include <thread>

#include "runtime/gloo_job.h"
#include "scenarios/collective_scenarios.h"
#include "scenarios/error_scenarios.h"
#include "scenarios/process_set_scenarios.h"

namespace {

using Scenario = void (*)(kolo_scenarios::Peer&);

class GlooPeer final : public kolo_scenarios::Peer {
 public:
  explicit GlooPeer(const kolo::GlooJob& job) : settings_(kolo::config_from_environment()), store_(job.server) {}

  int rank() const override { return kolo::rank(); }
  int size() const override { return kolo::size(); }
  const kolo::Config& settings() const override { return settings_; }

  kolo::Status wait(const kolo::Handle& handle, std::chrono::milliseconds bound) override {
    const kolo::Status s = handle.wait_for(bound);
    if (s.code() == kolo::StatusCode::Pending) give_up("an operation");
    return s;
  }
  kolo::Status wait_up_to(const kolo::Handle& handle, std::chrono::milliseconds bound) override {
    return handle.wait_for(bound);
  }
  kolo::Status join(int* last) override {
    auto result = std::async(std::launch::async, [] {
      try {
        return std::pair{kolo::Status::OK(), kolo::join()};
      } catch (const kolo::Error& e) {
        return std::pair{kolo::Status(e.code(), e.what()), -1};
      }
    });
    if (result.wait_for(kolo_scenarios::kBound) != std::future_status::ready) give_up("join()");
    const auto [status, joined_last] = result.get();
    if (last != nullptr) *last = joined_last;
    return status;
  }
  void blocking(const std::function<void()>& call) override { call(); }

  // Every rank publishes its arrival at this meeting, then waits for the others'.
  void sync() override {
    const std::string meeting = "test-sync/" + std::to_string(++meetings_) + "/";
    store_.set(meeting + std::to_string(rank()), "here");
    for (int q = 0; q < size(); ++q) store_.wait_for(meeting + std::to_string(q), kolo_scenarios::kBound);
  }
  void sleep(std::chrono::milliseconds duration) override { std::this_thread::sleep_for(duration); }
  double seconds() const override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  void capture_log() override {}
  std::string captured_log() override { return ""; }
  bool can_stop_taking_part() const override { return false; }
  void stop_taking_part() override { give_up("stop_taking_part (not possible here)"); }
  std::optional<int64_t> named_negotiations() const override { return std::nullopt; }
  std::optional<int64_t> data_allreduces() const override { return std::nullopt; }

  void check(bool ok, const char* expression, const char* file, int line, const std::string& context) override {
    ++checks_;
    if (ok) return;
    ++failures_;
    std::fprintf(stderr, "rank %d: %s:%d: FAILED: CHECK(%s): %s\n", job_rank_, file, line, expression,
                 context.c_str());
  }
  int checks() const { return checks_; }
  int failures() const { return failures_; }

 private:
  [[noreturn]] void give_up(const std::string& what) {
    std::fprintf(stderr, "rank %d: FAILED: %s did not finish in time\n", job_rank_, what.c_str());
    std::fflush(nullptr);
    std::_Exit(4);
  }

  kolo::Config settings_;
  kolo::rendezvous::Client store_;
  const int job_rank_ = kolo::rank();  // what a failure says, also after a scenario ended kolo
  int meetings_ = 0, checks_ = 0, failures_ = 0;
};

// A worker that shuts kolo down and starts it again keeps its place in the job (Horovod's
// Gloo mode allows it, and its test suite does it), and the collectives run as before.
void a_restart_keeps_the_place(kolo_scenarios::Peer& peer) {
  const int rank = kolo::rank(), size = kolo::size();
  kolo::shutdown();
  kolo::init();
  PEER_CHECK(peer, kolo::rank() == rank && kolo::size() == size,
             "rank " + std::to_string(kolo::rank()) + " of " + std::to_string(kolo::size()) + " after the restart, " +
                 std::to_string(rank) + " of " + std::to_string(size) + " before");
}

// Once a worker has ended, a restart of another is refused at once, naming it, instead of
// waiting for a place that needs the worker that is gone.
void a_restart_after_a_worker_ended_is_refused(kolo_scenarios::Peer& peer) {
  const int rank = kolo::rank();
  kolo::shutdown();
  if (rank != 0) return;  // ends: main returns after this scenario
  std::this_thread::sleep_for(std::chrono::seconds(2));  // kolorun notices rank 1's end within 0.1 s
  std::string error = "(none)";
  try {
    kolo::init();
  } catch (const kolo::Error& e) {
    error = e.what();
  }
  PEER_CHECK(peer, error.find("rank 1 (localhost:1) has finished") != std::string::npos &&
                       error.find("does not re-form") != std::string::npos,
             "init() after rank 1 ended: " + error);
}

const std::map<std::string, std::vector<std::pair<const char*, Scenario>>> kSuites = {
    {"collectives",
     {{"allreduce of every dtype and op, round after round", kolo_scenarios::allreduce_rounds_are_exact_and_cached},
      {"many tiny tensors fused", kolo_scenarios::many_tiny_tensors_fuse},
      {"submission order differing per rank", kolo_scenarios::submission_order_differs_per_rank},
      {"allgather, broadcast, alltoall, reducescatter", kolo_scenarios::other_collectives_are_exact},
      {"join", kolo_scenarios::join_reduces_over_the_ranks_still_active},
      {"mismatches", kolo_scenarios::mismatches_fail_on_every_rank},
      {"a cached tensor changing shape", kolo_scenarios::cached_tensor_changing_shape_fails_on_every_rank},
      {"a restart keeps the place", a_restart_keeps_the_place},
      {"allreduce after the restart", kolo_scenarios::allreduce_rounds_are_exact_and_cached}}},
    {"restart_after_an_exit", {{"a restart after a worker ended is refused", a_restart_after_a_worker_ended_is_refused}}},
    {"process_sets",
     {{"every op on overlapping, disjoint and singleton sets",
       kolo_scenarios::every_op_on_overlapping_disjoint_and_singleton_sets},
      {"process set errors", kolo_scenarios::process_set_errors_are_clear_on_every_rank},
      {"grouped collectives", kolo_scenarios::grouped_collectives_run_as_one_unit},
      {"byte buffers", kolo_scenarios::byte_buffers_of_any_size}}},
};

}  // namespace

int main(int argc, char** argv) {
  const std::string suite = argc > 1 ? argv[1] : "";
  auto it = kSuites.find(suite);
  if (it == kSuites.end()) {
    std::fprintf(stderr, "usage: kolorun --gloo -np N kolo_gloo_scenarios collectives|process_sets|restart_after_an_exit\n");
    return 2;
  }
  const std::optional<kolo::GlooJob> job = kolo::gloo_job_from_environment();
  if (!job) {
    std::fprintf(stderr, "kolo_gloo_scenarios: not a Gloo job (run it with kolorun --gloo)\n");
    return 2;
  }
  kolo::init();
  GlooPeer peer(*job);
  const int rank = peer.rank(), size = peer.size();  // also when kolo is down, after the last scenario
  for (const auto& [name, scenario] : it->second) {
    const int before = peer.failures();
    scenario(peer);
    if (kolo::is_initialized()) peer.sync();  // every rank is done with the scenario's names before the next one
    if (rank == 0) std::printf("%s: %s\n", peer.failures() == before ? "passed" : "FAILED", name);
    if (!kolo::is_initialized()) break;  // the scenario ended kolo here
  }
  std::printf("rank %d of %d: %d checks, %d failed\n", rank, size, peer.checks(), peer.failures());
  if (kolo::is_initialized()) kolo::shutdown();
  if (peer.checks() == 0 && suite != "restart_after_an_exit") return 3;  // nothing was checked: not a pass
  return std::min(peer.failures(), 100);
}
