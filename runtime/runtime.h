// One rank's runtime: its transport (transport.h), the backends, the queue, and the
// background thread that runs negotiation cycles. The public functions in api.cc forward
// to the instance created by kolo::init(), or to the one a thread is bound to (ranks as
// threads of one process, bind_thread_to()).
//
// A cycle, on every rank in lockstep:
//   1. take newly submitted entries; a name whose parameters match its response-cache
//      entry becomes a bit, any other becomes a full request for the coordinator;
//   2. one AND-allreduce of [flags | ready bits | inverted bits] tells every rank which
//      cached tensors are ready everywhere (AND), which anywhere (OR), and the flags
//      (shutdown, joined, "someone needs the slow path");
//   3. cached tensors ready everywhere run, in slot order;
//   4. if anyone needs it, the slow path: requests are gathered at rank 0, whose
//      Coordinator validates them and broadcasts the responses; every rank runs them
//      in order and records them in its cache.
//
// A Runtime serves one process set (process_sets.h): its transport holds only the set's
// ranks, numbered from 0, so the set's first rank coordinates it. Its SetRole says which
// set it is, for messages, for the timeline and for the ranks the API is given.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>

#include "autotuner.h"
#include "clock.h"
#include "completion_watcher.h"
#include "config.h"
#include "coordinator.h"
#include "devices.h"
#include "executor.h"
#include "cycle_decisions.h"
#include "fusion.h"
#include "response_cache.h"
#include "tensor_queue.h"
#include "timeline.h"
#include "transport.h"
#include "watchdog.h"

namespace kolo {

// Runs an OpType::ProcessSet operation, on the global set's background thread, at the same
// point on every rank: `transport` is the global set's, free for collectives (subset()).
using ProcessSetHandler = std::function<Status(TensorEntry& entry, Transport& transport)>;

struct SetRole {
  int id = 0;                     // 0: the global set
  std::vector<int> global_ranks;  // the set's ranks as ranks of the global set; empty: 0..size-1
  ProcessSetHandler on_process_set;  // the global set's runtime only
  // The global set's runtime only: called on the background thread when its loop ends in a
  // round every rank took part in but this rank did not ask for (it has not called
  // shutdown()): another rank's shutdown (`why`: Aborted), or a stall (`why`: Stalled, the
  // reason later operations fail with).
  std::function<void(const Status& why)> on_stopped_by_others;
  // The global set's runtime only: called on the background thread as a stall stops it,
  // before the stalled operations' handles complete (the process sets stop with it).
  std::function<void()> on_stall;
};

class Runtime {
 public:
  // Collective over `transport`: agrees on the shared settings (rank 0's), then starts the
  // background thread. Every time it reads comes from `clock`, and the timeline (which may
  // be closed) is shared with the rank's other runtimes: both must outlive it.
  Runtime(std::unique_ptr<Transport> transport, Config config, const Clock& clock, Timeline& timeline,
          SetRole role = {});
  ~Runtime();

  const Transport& transport() const { return *transport_; }
  const Config& config() const { return config_; }
  const Clock& clock() const { return clock_; }
  Devices& devices() { return *devices_; }
  int set_id() const { return role_.id; }
  // Rank r of this set as a rank of the global set, and back (-1: not in the set).
  int global_rank(int r) const { return role_.global_ranks.empty() ? r : role_.global_ranks.at(r); }
  int set_rank(int global) const;
  // " in process set 3" for messages; empty for the global set.
  const std::string& where() const { return where_; }
  // An unnamed operation's name: "<type>.noname.<n>", counted per type in this set (n:
  // next_unnamed(type), which counts).
  std::string automatic_name(OpType type);
  uint64_t next_unnamed(OpType type) { return unnamed_.at(static_cast<std::size_t>(type)).fetch_add(1); }
  // A response for an automatic name takes that name, and those before it, out of use on
  // every rank, also on one that did not submit it.
  void skip_used_automatic_names(const Response& response);

  // Hands entries to the background thread; fails at once only if kolo has stopped.
  Status submit(EntryPtr entry);
  Status submit(std::vector<EntryPtr> entries);  // a group, kept together
  void caller_waits() { queue_.caller_waits(); }
  std::shared_ptr<detail::HandleState> join();
  void shutdown();
  // A process set's runtime, after the global set's stall: asks the background thread to
  // stop without waiting for it (shutdown() joins later). Its next cycle runs nothing on
  // any rank of the set; what is still waiting, and every later operation, fails with
  // Stalled.
  void stop_after_global_stall();
  // Why this runtime stopped on every rank without this rank's shutdown(): a stall, or
  // another rank's shutdown (its program ended, or failed and exited). Set before the
  // operations that did not run fail, so a caller that saw one fail can ask.
  bool stopped_by_stall() const { return stalled_.load(); }
  // Why, after a stall ("kolo has shut down on every rank after a stall: tensor 'x' ...").
  std::optional<std::string> stall_message() const {
    return stalled_.load() ? std::optional<std::string>(stopped_by_stall_->message()) : std::nullopt;
  }
  bool stopped_by_peer_shutdown() const { return stopped_by_peer_shutdown_.load(); }

  // Whether this runtime has failed in a way that ends the job (watchdog.h), and, after
  // such a failure, the end of the job now (over MPI it does not return): the exit paths
  // of a program that saw the error must not wait for ranks that no longer answer.
  bool failed() const { return watchdog_->has_failed(); }
  void end_job_after_failure() { watchdog_->end_now(); }

 private:
  void loop();
  // Returns false once the ranks have agreed to stop.
  bool cycle();
  void accept(std::vector<EntryPtr>& entries);
  bool has_pending() const;
  // joined: whether this rank has joined, as this cycle's flags said.
  std::vector<Response> slow_path(std::vector<uint32_t>& invalidations, bool joined);
  // Runs responses[i] over this rank's entries[i] (null where this rank has joined).
  void run(const std::vector<Response>& responses,
           const std::vector<std::vector<TensorEntry*>>& entries, Clock::time_point decided);
  void run_cached(const std::vector<uint64_t>& ready, Clock::time_point decided);
  const std::vector<Response>& cached_plan(const std::vector<uint64_t>& ready);
  // Completes the entries' handles with `status` and forgets the entries.
  void finish(const std::vector<TensorEntry*>& entries, const Status& status);
  EntryPtr release(TensorEntry& entry);
  void defer(const std::vector<TensorEntry*>& entries, std::shared_ptr<ops::Event> done);
  void invalidate(uint32_t slot);
  void send_by_name(uint32_t slot);
  void set_waiting(uint32_t slot, bool waiting);
  void watch_partial_slots(const std::vector<uint64_t>& partial_bits);
  void fail_everything(const Status& status);
  void apply_setting(uint64_t index);
  void autotune_step();

  std::unique_ptr<Transport> transport_;
  ops::ControlChannel& control_;  // the transport's
  const Clock& clock_;
  Config config_;
  SetRole role_;
  std::string where_;
  std::array<std::atomic<uint64_t>, 8> unnamed_{};  // by OpType
  std::unique_ptr<Watchdog> watchdog_;
  std::unique_ptr<Devices> devices_;
  Timeline& timeline_;
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<CompletionWatcher> completions_;  // GPU operations' handles
  FusionOptions fusion_;

  TensorQueue queue_;
  std::thread thread_;
  // shutdown() may run on two threads at once (kolo::shutdown() on the program's, the
  // removal of a process set on the global set's background thread): one joins, the other
  // waits for it.
  std::mutex shutdown_mutex_;
  std::atomic<bool> shutdown_requested_{false};
  std::atomic<bool> stop_after_global_stall_{false};
  std::atomic<bool> stalled_{false};  // stopped_by_stall_ is set
  std::atomic<bool> stopped_by_peer_shutdown_{false};
  bool communication_failed_ = false;  // written by the thread before it ends, read after join
  std::mutex join_mutex_;  // guards join_handle_
  std::shared_ptr<detail::HandleState> join_handle_;

  // ---- owned by the background thread -------------------------------------------------
  ResponseCache cache_;
  std::vector<EntryPtr> incoming_;  // this cycle's new entries (its buffer is reused)
  std::vector<std::optional<uint32_t>> incoming_slots_;
  // This rank's entries that wait for the others: those negotiated by name, and by cache
  // slot those negotiated by bit (kept apart: a steady loop never touches the map).
  std::unordered_map<std::string, EntryPtr> in_flight_;
  std::vector<EntryPtr> bit_entries_;
  std::vector<uint64_t> waiting_bits_;  // bit_entries_' bits
  std::vector<uint64_t> ready_bits_;    // this cycle's cached tensors ready everywhere
  // The fused responses last built for the cached tensors, and what they were built from.
  struct CachedPlan {
    std::vector<uint64_t> ready;
    uint64_t cache_version = 0;
    FusionOptions fusion;
    bool named = false;  // built with the tensors' names (for the timeline)
    std::vector<Response> responses;
  };
  CachedPlan plan_;
  std::vector<std::vector<TensorEntry*>> cached_entries_;  // by plan_ response (buffers reused)
  std::vector<std::string> to_send_;                 // names for the next slow path
  std::vector<uint32_t> invalidations_to_send_;
  std::unique_ptr<Coordinator> coordinator_;         // rank 0 only
  std::vector<Response> stalled_failures_;           // rank 0: to broadcast
  // Set on every rank in the same cycle, by the first stall failure the coordinator sent:
  // the loop then stops there, as after a shutdown every rank agreed on (Horovod's
  // HOROVOD_STALL_SHUTDOWN_TIME_SECONDS), with this as the reason.
  std::optional<Status> stopped_by_stall_;
  // The cycle that stopped this set's runtime carried the global set's stall, from some
  // rank (a flag of the cycle: every rank of the set learns it together, whichever rank's
  // global runtime got there first).
  bool stopped_by_global_stall_ = false;
  std::map<uint32_t, Clock::time_point> partial_since_;  // rank 0: slot -> first seen partial
  Clock::time_point last_stall_check_;
  std::unique_ptr<Autotuner> autotuner_;  // KOLO_AUTOTUNE: every rank decodes, rank 0 decides
  uint64_t applied_setting_ = ~uint64_t{0};
  int64_t cycle_allreduce_bytes_ = 0;     // this cycle's allreduce work, for the autotuner
  double cycle_allreduce_seconds_ = 0;
  bool joined_reported_ = false;  // the coordinator knows this rank has joined
  Clock::time_point last_progress_;  // the last cycle that took, ran or failed an operation
  int last_joined_ = -1;          // as the coordinator last said (ResponseList::last_joined)
};

}  // namespace kolo
