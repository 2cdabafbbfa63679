// Elastic training in C++: Horovod's elastic API (horovod.common.elastic) for kolo's own
// training loops. A job that kolorun runs with --min-np/--max-np/--host-discovery-script
// loses workers and gains them while it trains (docs/elastic.md):
//
//   MyState state(model, optimizer);          // a kolo::elastic::State
//   kolo::elastic::run(state, [&] {
//     for (; state.epoch < epochs; ++state.epoch) {
//       for (...) { train one batch; if (batch % 10 == 0) state.commit(); }
//     }
//   });
//
// run() syncs the state from rank 0, then calls the training function. When a worker is
// lost, a collective fails with CommFailure on the others; when one is alive but stops
// taking part (stuck in its own code), a collective fails with Stalled after
// KOLO_STALL_SHUTDOWN_TIME_SECONDS; when one's program fails and shuts kolo down as it
// exits, with Aborted. In each case run() restores the last committed state,
// re-forms kolo with the workers that come back (reset(): shutdown(), init()), syncs and
// calls the function again. When hosts are added or removed, commit() throws
// HostsUpdatedInterrupt on every rank at the same step: run() re-forms without restoring.
// Outside an elastic job, run() just calls the function, and a failure ends it as usual.
#pragma once

#include <functional>
#include <stdexcept>
#include <vector>

#include "kolo/kolo.h"

namespace kolo::elastic {

// commit() and check_host_updates() throw it on every rank at once when the job's hosts
// changed. (Horovod's skip_sync is always false here: run() always syncs after a reset.)
class HostsUpdatedInterrupt : public std::runtime_error {
 public:
  HostsUpdatedInterrupt() : std::runtime_error("kolo: the job's hosts changed; re-forming") {}
};

// This process is a worker of an elastic kolorun job.
bool is_elastic();
// kolo has stopped on every worker without this worker's shutdown(): a stall shut the
// global set down, or another worker shut kolo down (the global set or one of its process
// sets) as its program failed and exited, or finished. run() resets then, as after a lost
// worker; after a finished worker, kolorun answers the reset by telling this worker to
// leave (reset() throws Aborted). False for an error that left kolo running (a data
// loader's timeout, a process set's own stall).
bool stopped_by_other_ranks();
// Whether kolorun says the job's hosts changed since this worker's round began: this
// worker's own answer (no collective). False outside an elastic job.
bool hosts_changed();
// shutdown(), then init(): joins the job's next round. Throws kolo::Error(Aborted) when
// kolorun says this worker is no longer part of the job (its host was removed, or another
// worker finished the job), with kolo shut down (is_initialized() false): run() passes it
// on, and the program should end without an error (examples/common/elastic_run.cc).
void reset();

class State {
 public:
  virtual ~State() = default;
  // Keeps the current state in memory (the last commit).
  virtual void save() = 0;
  // Goes back to the last commit.
  virtual void restore() = 0;
  // Makes every rank's state rank 0's (collective).
  virtual void sync() = 0;

  // save(), then check_host_updates(). Commit every few batches: a failure loses the
  // batches since the last commit.
  void commit();
  // Collective: throws HostsUpdatedInterrupt on every rank when any rank has heard that
  // the hosts changed.
  void check_host_updates();
  void register_reset_callbacks(std::vector<std::function<void()>> callbacks);
  void on_reset();  // run() calls it after each reset

 private:
  std::vector<std::function<void()>> reset_callbacks_;
};

// Runs `train` until it returns, across failures and host changes (see above).
template <class Train>
auto run(State& state, Train&& train) -> decltype(train()) {
  bool reset_required = false;
  int failed_resets = 0;  // in a row: with kolorun gone, every reset would wait and fail
  for (;;) {
    if (reset_required) {
      try {
        reset();
        state.on_reset();
        failed_resets = 0;
      } catch (const Error& e) {
        // A worker of the new round never arrived (its host broken): that round is lost as
        // a worker is, and the next reset asks for a later one. The state was restored
        // before this reset.
        if (e.code() != StatusCode::CommFailure || !is_elastic() || ++failed_resets > 3) throw;
        continue;
      }
    }
    try {
      state.sync();  // inside: a worker lost while the state is synced is lost as any other
      return train();
    } catch (const Error& e) {
      const bool lost_worker = e.code() == StatusCode::CommFailure;
      // Stalled: a worker stuck in its own code; Aborted: one that left the round.
      const bool stopped_by_others = (e.code() == StatusCode::Stalled || e.code() == StatusCode::Aborted) &&
                                     stopped_by_other_ranks();
      if (!(lost_worker || stopped_by_others) || !is_elastic()) throw;
      state.restore();
    } catch (const HostsUpdatedInterrupt&) {
      if (!is_elastic()) throw;
    }
    reset_required = true;
  }
}

}  // namespace kolo::elastic
