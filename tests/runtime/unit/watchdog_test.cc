// The watchdog (runtime/watchdog.h) over an in-process world of three ranks on a
// ManualClock, with rank 2 hung (it answers nothing): a data collective that completes no
// piece for the data timeout ends the job, naming the collective, its tensors and the rank
// that does not answer; one that still moves never does; a reported failure ends the job
// after the grace time, or at once when the program ends; a failure is acted on once.
#include <catch2/catch.hpp>

#include <atomic>
#include <functional>
#include <mutex>
#include <thread>

#include "runtime/clock.h"
#include "runtime/inprocess_transport.h"
#include "runtime/logging.h"
#include "runtime/watchdog.h"

using Catch::Matchers::Contains;
using namespace std::chrono_literals;

namespace {

class ThreeRanks {
 public:
  explicit ThreeRanks(bool rank_2_hangs = true) : world_(3, clock_) {
    for (int r = 0; r < 3; ++r) transports_.push_back(world_.transport(r));
    if (rank_2_hangs) world_.stop_taking_part(2);
    kolo::set_log_sink([this](kolo::LogLevel, const std::string& line) {
      std::lock_guard<std::mutex> lock(mutex_);
      log_ += line + "\n";
    });
    settings_.data_timeout = 3s;
    settings_.grace = 5s;
  }
  ~ThreeRanks() { kolo::set_log_sink({}); }

  kolo::Watchdog make(int rank) { return kolo::Watchdog(*transports_[rank], settings_, clock_); }
  kolo::WatchdogSettings& settings() { return settings_; }
  std::optional<int> ended_by() const { return world_.ended_by(); }
  void hang(int rank) { world_.stop_taking_part(rank); }
  double seconds() const { return std::chrono::duration<double>(clock_.now().time_since_epoch()).count(); }
  std::string log() {
    std::lock_guard<std::mutex> lock(mutex_);
    return log_;
  }

  // Lets simulated time pass in steps of 2 ms, each after 0.2 ms of real time (for the
  // watchdogs' threads to look), until `done` or `limit`; calls `each_second` as every
  // simulated second passes. The upper bounds below allow 1.5 s of simulated time (0.15 s
  // of real time) for a thread that the machine is slow to run.
  void run_until(const std::function<bool()>& done, std::chrono::seconds limit,
                 const std::function<void()>& each_second = nullptr) {
    const auto end = clock_.now() + limit;
    int steps = 0;
    while (!done() && clock_.now() < end) {
      std::this_thread::sleep_for(200us);
      clock_.advance(2ms);
      if (++steps % 500 == 0 && each_second) each_second();
    }
  }

 private:
  kolo::ManualClock clock_;
  kolo::InProcessWorld world_;
  std::vector<std::unique_ptr<kolo::Transport>> transports_;
  kolo::WatchdogSettings settings_;
  std::mutex mutex_;
  std::string log_;
};

kolo::Response allreduce_of(std::vector<std::string> names) {
  kolo::Response r;
  r.type = kolo::OpType::Allreduce;
  r.names = std::move(names);
  return r;
}

}  // namespace

TEST_CASE("a data collective without progress ends the job, naming it and the rank that does not answer",
          "[watchdog]") {
  ThreeRanks job;
  kolo::Watchdog w0 = job.make(0), w1 = job.make(1);
  const kolo::Response r = allreduce_of({"grad/a", "grad/b", "grad/c"});
  const std::vector<kolo::TensorEntry*> entries;
  {
    const auto call = w0.data_call(r, entries);
    job.run_until([&] { return job.ended_by().has_value(); }, 30s);
  }
  REQUIRE(job.ended_by() == 0);
  // The data timeout, then the roll call's bound (rank 2 never answers).
  CHECK(job.seconds() >= 3 + 2);
  CHECK(job.seconds() <= 3 + 2 + 1.5);
  const std::string log = job.log();
  CHECK_THAT(log, Contains("[kolo 0] FATAL: kolo: allreduce of 'grad/a' and 2 more tensors made no progress for 3 s"));
  CHECK_THAT(log, Contains("; rank 2 did not answer a roll call within 2 s; ending the job (exit code 70)"));
}

// An allgather in one piece on a slow link, or a node's non-leaders while their leader
// works: no piece completes, but every rank is there.
TEST_CASE("a data collective without progress whose ranks all answer is waited on, until one stops answering",
          "[watchdog]") {
  ThreeRanks job(/*rank_2_hangs=*/false);
  kolo::Watchdog w0 = job.make(0), w1 = job.make(1), w2 = job.make(2);
  const kolo::Response r = allreduce_of({"slow"});
  const std::vector<kolo::TensorEntry*> entries;
  const auto call = w0.data_call(r, entries);
  job.run_until([&] { return job.ended_by().has_value(); }, 12s);  // four data timeouts
  CHECK_FALSE(job.ended_by().has_value());
  CHECK_THAT(job.log(), Contains("[kolo 0] WARNING: kolo: allreduce of 'slow' has made no progress for 3 s "
                                 "(KOLO_DATA_TIMEOUT_SECONDS), but every rank answers a roll call: waiting on"));
  job.hang(2);
  const double hung_at = job.seconds();
  job.run_until([&] { return job.ended_by().has_value(); }, 30s);
  REQUIRE(job.ended_by() == 0);
  CHECK(job.seconds() - hung_at <= 3 + 2 + 1.5);  // at most a data timeout, then the roll call
  CHECK_THAT(job.log(), Contains("made no progress for 3 s (KOLO_DATA_TIMEOUT_SECONDS): a rank has died, hung, or "
                                 "lost its network link; rank 2 did not answer a roll call within 2 s"));
}

TEST_CASE("a long data collective that completes pieces never trips the watchdog", "[watchdog]") {
  ThreeRanks job;
  kolo::Watchdog w0 = job.make(0), w1 = job.make(1);
  const kolo::Response r = allreduce_of({"big"});
  const std::vector<kolo::TensorEntry*> entries;
  const auto call = w0.data_call(r, entries);
  // A piece every simulated second, for four times the data timeout.
  job.run_until([] { return false; }, 12s, [&] { w0.progress()->fetch_add(1); });
  CHECK_FALSE(job.ended_by().has_value());
  CHECK(job.log().empty());
  // Then it stops moving.
  job.run_until([&] { return job.ended_by().has_value(); }, 30s);
  CHECK(job.ended_by() == 0);
}

TEST_CASE("a reported failure ends the job after the grace time, once", "[watchdog]") {
  ThreeRanks job;
  kolo::Watchdog w0 = job.make(0), w1 = job.make(1);
  w0.failed(kolo::Status(kolo::StatusCode::CommFailure, "no answer from the other ranks for 5 s"));
  w0.failed(kolo::Status(kolo::StatusCode::Internal, "a second failure changes nothing"));
  CHECK(w0.has_failed());
  CHECK_FALSE(w1.has_failed());
  job.run_until([&] { return job.ended_by().has_value(); }, 30s);
  REQUIRE(job.ended_by() == 0);
  CHECK(job.seconds() >= 5);
  CHECK(job.seconds() <= 5 + 1.5);
  const std::string log = job.log();
  CHECK_THAT(log, Contains("[kolo 0] FATAL: no answer from the other ranks for 5 s; rank 2 did not answer"));
  CHECK(log.find("second failure") == std::string::npos);
  CHECK(log.find("FATAL") == log.rfind("FATAL"));  // one line
}

// A process set's watchdog: its transport's ranks are the set's, its last line the job's.
TEST_CASE("a process set's last line names the job's ranks, after what must be saved is saved", "[watchdog]") {
  ThreeRanks job;
  job.settings().global_ranks = {1, 4, 6};
  int saved = 0;
  job.settings().before_end = [&] { ++saved; };
  kolo::Watchdog w0 = job.make(0), w1 = job.make(1);
  w0.failed(kolo::Status(kolo::StatusCode::CommFailure, "no answer in process set 2"));
  job.run_until([&] { return job.ended_by().has_value(); }, 30s);
  REQUIRE(job.ended_by() == 0);
  CHECK(saved == 1);
  CHECK_THAT(job.log(), Contains("[kolo 1] FATAL: no answer in process set 2; rank 6 did not answer"));
}

TEST_CASE("after a failure the program's end ends the job at once", "[watchdog]") {
  ThreeRanks job;
  job.settings().grace = 600s;
  kolo::Watchdog w0 = job.make(0), w1 = job.make(1);
  w0.end_now();  // no failure: nothing to end
  CHECK_FALSE(job.ended_by().has_value());
  w0.failed(kolo::Status(kolo::StatusCode::Stalled, "tensor 'x' was not submitted by rank(s) 2"));
  std::thread program([&] { w0.end_now(); });
  job.run_until([&] { return job.ended_by().has_value(); }, 30s);
  program.join();
  REQUIRE(job.ended_by() == 0);
  CHECK(job.seconds() <= 2 + 1.5);  // the roll call only, not the grace time
  CHECK_THAT(job.log(), Contains("FATAL: tensor 'x' was not submitted by rank(s) 2 (the program ended after the error); "
                                 "rank 2 did not answer"));
}

TEST_CASE("a roll call hears every rank that answers", "[watchdog]") {
  kolo::ManualClock clock;
  kolo::InProcessWorld world(3, clock);
  std::vector<std::unique_ptr<kolo::Transport>> t;
  for (int r = 0; r < 3; ++r) t.push_back(world.transport(r));
  std::vector<int> silent = {-1};
  std::atomic<bool> asked{false};
  std::thread asker([&] {
    silent = t[0]->roll_call(2s);
    asked = true;
  });
  // Rank 1 answers at once; rank 2 only after a second: both are in time.
  for (int step = 0; step < 1500 && !asked; ++step) {
    std::this_thread::sleep_for(200us);
    t[1]->answer_roll_call();
    if (step >= 500) t[2]->answer_roll_call();
    clock.advance(2ms);
  }
  asker.join();
  CHECK(silent.empty());
}
