// One rank's kolo: the Runtime of the global set (id 0) and one Runtime for each process
// set this rank belongs to, each over its own transport (Transport::subset() of the global
// one: its own communicator), so each set has its own background thread, negotiation,
// response cache and coordinator (the set's first rank), and sets never wait for each
// other. Also the table of every set of the job, this rank's or not, for the queries, and
// the timeline all of them write to.
//
// Static sets are made while kolo starts, before any background thread runs. Dynamic ones
// (KOLO_DYNAMIC_PROCESS_SETS) are made and removed by an OpType::ProcessSet operation of
// the global set: negotiated like any other, so ranks that disagree get a Mismatch and a
// rank that never calls gets a stall error, and run by the global set's background thread,
// the one thread that may use the global transport (transport.h). The table changes only
// there, at the same point on every rank, so every rank sees the same sets and ids.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "runtime.h"

namespace kolo {

class ProcessSets {
 public:
  // Collective over `transport`. Throws kolo::Error, on every rank, when the static sets'
  // lists differ between ranks, name a rank twice or one outside the job, are listed twice
  // or equal the global set (InvalidArgument), or the timeline cannot be opened; nothing
  // is left running then.
  // `on_stopped_by_others`: see SetRole. A stall of the global set also stops the sets'
  // runtimes (their operations then fail with Stalled).
  ProcessSets(std::unique_ptr<Transport> transport, const Config& config, const Clock& clock,
              const std::vector<std::vector<int>>& static_sets,
              std::function<void(const Status& why)> on_stopped_by_others = nullptr);
  ~ProcessSets();
  ProcessSets(const ProcessSets&) = delete;
  ProcessSets& operator=(const ProcessSets&) = delete;

  Runtime& global() const { return *global_; }
  // The runtime of set `id`, or why the calling rank cannot use it: InvalidArgument for an
  // unknown set or one this rank is not in.
  std::shared_ptr<Runtime> runtime(int id, Status& why_not) const;
  // Every set's ranks (of the global set), by id; and one set's, if it exists.
  std::map<int, std::vector<int>> table() const;
  std::optional<std::vector<int>> ranks(int id) const;

  Timeline& timeline() { return timeline_; }
  // A caller is about to wait on a handle: every runtime of this rank starts its cycle.
  void caller_waits();

  // Stops every runtime: the sets', then the global one's.
  void shutdown();
  // Whether kolo stopped without this rank's shutdown(): the global set after a stall or
  // another rank's shutdown, or a set after another rank's shutdown (a rank that shuts kolo
  // down stops its sets first, so their operations fail on the others while the global set
  // may still run; a set's own stall stops that set only, and does not count).
  bool stopped_by_other_ranks() const;
  // Whether any runtime has failed in a way that ends the job, and the end of the job now.
  bool failed() const;
  void end_job_after_failure();

 private:
  struct Set {
    std::vector<int> ranks;
    std::shared_ptr<Runtime> runtime;  // null where this rank is not in the set
  };

  // OpType::ProcessSet, on the global set's background thread (ProcessSetHandler).
  Status change(TensorEntry& entry, Transport& transport);
  Status add(const std::vector<int>& ranks, TensorEntry& entry, Transport& transport);
  Status remove(int id);
  std::vector<std::shared_ptr<Runtime>> runtimes() const;  // the sets' (this rank's)

  const Clock& clock_;
  Timeline timeline_;
  std::shared_ptr<Runtime> global_;
  mutable std::mutex mutex_;  // guards sets_ and next_id_
  std::map<int, Set> sets_;   // every set but the global one
  int next_id_ = 1;
};

// Checks a list of static process sets (ranks of a job of `size`): sorts each set's ranks
// and returns the lists, or throws kolo::Error(InvalidArgument) naming the first bad entry
// (a set listed twice or equal to the global set, a rank named twice or outside the job,
// an empty set). Entries are numbered from 1, as the sets' ids will be.
std::vector<std::vector<int>> checked_process_sets(std::vector<std::vector<int>> sets, int size);

// Makes the public API (api.cc) on the calling thread use `sets` instead of the ones
// kolo::init() made, until called again (nullptr: init()'s again). Each thread of a job
// whose ranks are threads of one process (inprocess_transport.h) is bound to its rank's.
void bind_thread_to(ProcessSets* sets);

}  // namespace kolo
