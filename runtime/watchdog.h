// The watchdog: a thread per rank that turns a fault which would otherwise hang the job (a
// rank that died, stopped, or lost its link) into the end of the whole job, in bounded
// time, with one line that says why (docs/reliability.md).
//
// It watches two things:
//   - the data path. The background thread runs each collective inside a DataCall. A call
//     that makes no progress (no piece of it completes: DataOptions::progress) for the data
//     timeout may be stuck inside MPI, where nothing can fail it: the watchdog holds a roll
//     call, and ends the job at once if a rank does not answer. If every rank answers, the
//     call is slow, not stuck (a collective in one piece on a slow link, or ranks waiting
//     while their node's leader works): it gets another data timeout, with a warning. A
//     long collective in pieces on a slow link completes pieces, and never trips it.
//   - failures the background thread reports (failed()): no answer within the control
//     timeout, a failed MPI call. (A stall is not one: every rank still answers, and kolo
//     shuts down on every rank instead, docs/reliability.md.) The handles have failed with
//     the error; the program has the grace time to see it and end (its exit, or
//     shutdown(), ends the job at once: end_now()); then the watchdog ends the job itself.
//     No exit path after a failure waits in a collective MPI_Finalize for a rank that does
//     not answer.
//
// Before it ends the job it holds a roll call (Transport::roll_call) to name the ranks that
// no longer answer, and it answers the other ranks' roll calls all along.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "clock.h"
#include "message.h"
#include "tensor_queue.h"
#include "transport.h"

namespace kolo {

// The exit code of every process of a job that kolo ends (EX_SOFTWARE).
constexpr int kJobFailedExitCode = 70;

struct WatchdogSettings {
  std::chrono::milliseconds data_timeout{std::chrono::seconds(300)};
  std::chrono::milliseconds grace{std::chrono::seconds(5)};
  // How often it looks, and answers roll calls.
  std::chrono::milliseconds tick{100};
  // How long a roll call waits for answers.
  std::chrono::milliseconds roll_call_bound{std::chrono::seconds(2)};
  // A process set's ranks as ranks of the job (empty: the global set), so that the last
  // line names the ranks kolorun and the job's logs know.
  std::vector<int> global_ranks;
  // Runs just before the job ends, when no destructor will run: the timeline's tail.
  std::function<void()> before_end;
};

class Watchdog {
 public:
  // `transport` and `clock` must outlive the watchdog.
  Watchdog(Transport& transport, WatchdogSettings settings, const Clock& clock);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // The background thread runs `response` over this rank's `entries` (both must outlive
  // the call) until the returned guard goes.
  class DataCall {
   public:
    DataCall(DataCall&&) = delete;
    ~DataCall();

   private:
    friend class Watchdog;
    explicit DataCall(Watchdog& watchdog) : watchdog_(watchdog) {}
    Watchdog& watchdog_;
  };
  [[nodiscard]] DataCall data_call(const Response& response, const std::vector<TensorEntry*>& entries);
  std::atomic<uint64_t>* progress() { return &progress_; }

  // The runtime has failed for good with `status`: the job ends (see above).
  void failed(const Status& status);
  bool has_failed() const;
  // After failed(): ends the job now. Over MPI it does not return.
  void end_now();

 private:
  void loop();
  void check_data_call(Clock::time_point now);
  // The roll call, once (whichever thread comes first; the other waits for its answer).
  void hold_roll_call();
  // Prints the one line (why, and who did not answer) and ends the job; once.
  void end_job(const std::string& why);
  int global_rank(int set_rank) const;
  // How long the roll call of a data call without progress waits for answers.
  std::chrono::milliseconds liveness_bound() const;

  Transport& transport_;
  const WatchdogSettings settings_;
  const Clock& clock_;
  std::atomic<uint64_t> progress_{0};

  mutable std::mutex mutex_;  // guards everything below
  std::condition_variable wake_;
  bool stop_ = false;
  const Response* call_ = nullptr;  // the collective under way, if any
  const std::vector<TensorEntry*>* call_entries_ = nullptr;
  uint64_t call_progress_ = 0;      // progress_ when last seen moving
  Clock::time_point call_moved_;    // when that was
  std::optional<Status> failure_;
  Clock::time_point grace_ends_;
  std::optional<std::vector<int>> silent_;  // the roll call's answer: who did not answer
  std::chrono::milliseconds silent_within_{0};  // how long that roll call waited
  bool ended_ = false;  // end_job() has run (in-process: the world records it)

  std::once_flag roll_call_once_;
  std::thread thread_;
};

}  // namespace kolo
