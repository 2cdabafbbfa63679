// The hand-off between callers and the background thread: callers push entries (a
// request plus the caller's buffers and handle) under a mutex and never block on the
// network; the background thread takes everything each cycle. Kept to a vector swap:
// this is on the path of every tensor of every step.
//
// The queue also knows which names are in flight, from push until the background thread
// forgets them, so that every API (C++, C, the bindings) refuses a name submitted again
// while in flight at the call, in the caller's thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "clock.h"
#include "handle_state.h"
#include "kolo/kolo.h"
#include "message.h"
#include "names_in_flight.h"

namespace kolo {

// One submitted operation. The caller's Handle points at `handle` and shares ownership
// of the whole entry (handle_of()), so an operation costs one allocation, and the queue
// and the background thread's tables move a pointer, not the entry: a step submits
// hundreds of them.
struct TensorEntry {
  Request request;      // name, dtype, shape, ... (the caller's view, minus the memory)
  const void* input = nullptr;
  void* output = nullptr;
  std::vector<int64_t> splits;  // alltoall: rows sent to each rank
  detail::HandleState handle;
  Clock::time_point enqueued;  // with the timeline on only
  Clock::time_point reported;  // when this rank told the others it is ready
  int32_t bit_slot = -1;       // set while it waits, negotiated by its response-cache bit
  std::size_t name_hash = 0;   // std::hash of request.name, set by TensorQueue::push: hashed once, used thrice
};

using EntryPtr = std::shared_ptr<TensorEntry>;

// The caller's side of `entry`: it keeps the entry alive, not only its state.
inline std::shared_ptr<detail::HandleState> handle_of(const EntryPtr& entry) {
  return std::shared_ptr<detail::HandleState>(entry, &entry->handle);
}

class TensorQueue {
 public:
  // Its waits read `clock`, which must outlive it. `where` ends the in-flight error's
  // first clause (" in process set 2 (ranks 0, 1)"; empty for the global set).
  explicit TensorQueue(const Clock& clock, std::string where = {}) : clock_(clock), where_(std::move(where)) {}

  // Fails, with the reason given to close(), once the queue is closed; with
  // InvalidArgument, pushing nothing, when a name is in flight or repeats within `entries`.
  Status push(EntryPtr entry);
  Status push(std::vector<EntryPtr> entries);  // kept together (a group)
  // The entries' names are free again (null entries are skipped). Called by the background
  // thread before their handles complete: a caller that sees its handle done may submit
  // the name again at once.
  void forget(const std::vector<TensorEntry*>& entries);
  // Moves everything queued into `into` (cleared first). The two vectors trade buffers,
  // so neither side reallocates in a steady loop.
  void take_all(std::vector<EntryPtr>& into);
  // Refuses all further pushes with `reason`; returns what was still queued.
  std::vector<EntryPtr> close(const Status& reason);
  std::optional<Status> closed() const;

  // Sleeps until wake(), a caller waiting with entries queued, or `deadline`. With entries
  // queued and no caller waiting yet, it then waits for the rest of the burst (settle()).
  void wait_for_work(Clock::time_point deadline);
  void wake();
  // A caller has started waiting on a handle: it has submitted what it needs for now, so
  // a burst being collected is complete.
  void caller_waits();

 private:
  template <typename Add>
  Status push_with(std::span<const EntryPtr> pushed, Add&& add);
  Status claim_names(std::span<const EntryPtr> pushed);
  void settle(std::unique_lock<std::mutex>& lock);

  const Clock& clock_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<EntryPtr> entries_;
  bool woken_ = false;
  bool sleeping_ = false;        // the background thread waits on cv_ between cycles
  bool settling_ = false;        // the background thread waits on cv_ for the end of a burst
  bool caller_waiting_ = false;  // a caller has waited on a handle since the last push
  std::optional<Status> closed_;
  uint64_t pushes_ = 0;
  const std::string where_;
  NamesInFlight names_in_flight_;
};

}  // namespace kolo
