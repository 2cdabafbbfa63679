#include "runtime.h"

#include <algorithm>
#include <cstdio>

#include "gpu_state.h"
#include "response_checks.h"
#include "logging.h"
#include "settings_record.h"
#include "settings_report.h"

namespace kolo {
namespace {

constexpr uint64_t kNeedSlowPath = 1u << 0;
constexpr uint64_t kShutdown = 1u << 1;
constexpr uint64_t kJoined = 1u << 2;
constexpr uint64_t kGlobalStall = 1u << 3;  // with kShutdown: a process set stops after the global set's stall

// A tensor ready on some ranks but not on others for this long is moved from the bit
// vector to the named path, where the coordinator can tell which ranks are missing.
constexpr std::chrono::seconds kPartialSlotTimeout{1};

std::string where_of(const SetRole& role) {
  if (role.id == 0) return "";
  std::string ranks;
  for (int r : role.global_ranks) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
  return " in process set " + std::to_string(role.id) + " (ranks " + ranks + ")";
}

// The coordinator's stall message ("kolo: tensor 'x' was not submitted by ...; failing
// it") as the reason in another: "tensor 'x' was not submitted by ...".
std::string stall_reason(std::string message) {
  const std::string prefix = "kolo: ";
  if (message.compare(0, prefix.size(), prefix) == 0) message.erase(0, prefix.size());
  if (const std::size_t tail = message.rfind("; failing"); tail != std::string::npos) message.erase(tail);
  return message;
}

}  // namespace

Runtime::Runtime(std::unique_ptr<Transport> transport, Config config, const Clock& clock, Timeline& timeline,
                 SetRole role)
    : transport_(std::move(transport)), control_(transport_->control()), clock_(clock),
      config_(std::move(config)), role_(std::move(role)), where_(where_of(role_)), timeline_(timeline),
      queue_(clock, where_), cache_(0) {
  if (role_.id == 0) {  // a process set's runtime is given the global set's agreed settings
    const Config own = config_;
    agree_on_settings(config_, control_);
    // Collective, so before the background thread starts to use the transport.
    report_ignored_settings(own, config_, control_);
  }
  cache_ = ResponseCache(config_.cache_capacity);
  bit_entries_.resize(static_cast<std::size_t>(config_.cache_capacity));
  waiting_bits_.assign((static_cast<std::size_t>(config_.cache_capacity) + 63) / 64, 0);
  const int rank = transport_->rank(), size = transport_->size();
  WatchdogSettings watch;
  watch.data_timeout = config_.data_timeout();
  watch.grace = config_.failure_grace();
  watch.global_ranks = role_.global_ranks;
  watch.before_end = [&timeline] { timeline.flush(); };
  watchdog_ = std::make_unique<Watchdog>(*transport_, std::move(watch), clock_);
  devices_ = std::make_unique<Devices>(*transport_, config_, watchdog_->progress());
  executor_ = std::make_unique<Executor>(*devices_, rank, size, timeline_, clock_,
                                         ExecutorRole{role_.id, role_.global_ranks});
  completions_ = std::make_unique<CompletionWatcher>(config_.control_timeout(), clock_,
                                                     [this](const Status& s) { watchdog_->failed(s); });
  fusion_ = fusion_options(config_.fusion_threshold_bytes, config_.allreduce_chunk_bytes, size);
  if (rank == 0) coordinator_ = std::make_unique<Coordinator>(size, role_.global_ranks, where_);
  if (config_.autotune)
    autotuner_ = std::make_unique<Autotuner>(Autotuner::default_candidates(size), kAutotuneBytesPerTrial);
  last_stall_check_ = clock_.now();
  thread_ = std::thread(&Runtime::loop, this);
}

int Runtime::set_rank(int global) const {
  if (role_.global_ranks.empty()) return global >= 0 && global < transport_->size() ? global : -1;
  const auto& g = role_.global_ranks;
  const auto it = std::find(g.begin(), g.end(), global);
  return it == g.end() ? -1 : static_cast<int>(it - g.begin());
}

std::string Runtime::automatic_name(OpType type) {
  return std::string(op_type_name(type)) + ".noname." + std::to_string(next_unnamed(type));
}

// A rank that had joined while the others ran an operation that fails with a rank joined
// (an allgather) did not count that operation's automatic name. Counting it now keeps the
// next unnamed operation's name the same on every rank: the counters follow what the job
// ran, not what each rank submitted.
void Runtime::skip_used_automatic_names(const Response& response) {
  const std::string prefix = std::string(op_type_name(response.type)) + ".noname.";
  std::atomic<uint64_t>& counter = unnamed_.at(static_cast<std::size_t>(response.type));
  for (const std::string& name : response.names) {
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string digits = name.substr(prefix.size());
    if (digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos) continue;  // fits in uint64
    const uint64_t next = std::stoull(digits) + 1;
    uint64_t seen = counter.load();
    while (seen < next && !counter.compare_exchange_weak(seen, next)) {
    }
  }
}

Runtime::~Runtime() {
  shutdown();
  // After a communication failure an operation may still be pending in the transport,
  // which may be unable to cancel it (transport.h): freeing the transport (its
  // communicator, the control channel that owns the operation's buffers) or the backends
  // it made would let the operation progress on freed memory. Leave them alive.
  if (communication_failed_ && transport_->pending_after_failure()) {
    (void)devices_.release();
    (void)transport_.release();
  }
}

// `enqueued` is only for the timeline: a clock read per tensor is a cost worth skipping.
Status Runtime::submit(std::vector<EntryPtr> entries) {
  if (timeline_.enabled()) {
    const auto now = clock_.now();
    for (EntryPtr& e : entries) e->enqueued = now;
  }
  return queue_.push(std::move(entries));
}

Status Runtime::submit(EntryPtr entry) {
  if (timeline_.enabled()) entry->enqueued = clock_.now();
  return queue_.push(std::move(entry));
}

std::shared_ptr<detail::HandleState> Runtime::join() {
  auto handle = std::make_shared<detail::HandleState>();
  std::lock_guard<std::mutex> lock(join_mutex_);
  if (auto closed = queue_.closed()) handle->complete(*closed);
  else if (join_handle_) handle->complete(Status(StatusCode::InvalidArgument, "kolo: join() is already in progress on this rank"));
  else join_handle_ = handle;
  queue_.wake();
  return handle;
}

void Runtime::shutdown() {
  shutdown_requested_ = true;
  queue_.wake();
  std::lock_guard<std::mutex> lock(shutdown_mutex_);
  if (thread_.joinable()) thread_.join();
  if (completions_) completions_->drain();  // GPU work already enqueued finishes (bounded)
}

void Runtime::stop_after_global_stall() {
  stop_after_global_stall_ = true;
  shutdown_requested_ = true;
  queue_.wake();
}

void Runtime::loop() {
  Status exit_status(StatusCode::Aborted, "kolo is shut down");
  bool agreed = false;  // the loop ended in a cycle every rank took part in
  set_thread_log_rank(global_rank(transport_->rank()));  // a set's rank 0 is not the job's
  try {
    const auto cycle_time = std::chrono::duration_cast<Clock::duration>(config_.cycle_time());
    // A stall: ranks wait on names that not all ranks have submitted, perhaps for ever.
    const auto stalled_after = std::chrono::milliseconds(100);
    const auto stalled_cycle_time = std::max<Clock::duration>(cycle_time, std::chrono::milliseconds(10));
    last_progress_ = clock_.now();
    for (;;) {
      const auto start = clock_.now();
      if (role_.id == 0 && timeline_.marks_cycles()) timeline_.cycle_start(start);
      if (!cycle()) break;
      // With work of its own still waiting, a rank goes straight into the next cycle: the
      // cycle's allreduce paces it to the other ranks. Idle, it sleeps a cycle time. Waiting
      // without progress, it sleeps longer: back to back, the cycles' allreduces would keep
      // a core busy for as long as the stall lasts (MPI polls while it waits). It sleeps
      // from the cycle's end, which the ranks share, so that they wake together and none
      // polls in the next allreduce while another still sleeps.
      if (!has_pending()) {
        timeline_.flush_if_written();
        queue_.wait_for_work(start + cycle_time);
      } else if (start - last_progress_ > stalled_after) {
        timeline_.flush_if_written();  // a hung job's timeline shows what ran last
        queue_.wait_for_work(clock_.now() + stalled_cycle_time);
      }
    }
    agreed = true;
    if (stopped_by_stall_) exit_status = *stopped_by_stall_;
    else if (stopped_by_global_stall_)
      exit_status = Status(StatusCode::Stalled,
                           "kolo has shut down on every rank after a stall of the global set (its error names the "
                           "tensor and the ranks)");
  } catch (const Error& e) {
    exit_status = Status(e.code(), e.what() + where_);
    // A device error counts as a communication failure too (the cautious choice): it
    // stops the loop from inside a collective, where the GPU path's NCCL communicators may
    // still hold that collective's work on a device that has just failed, with other
    // ranks inside it; freeing them, or the device buffers, may then block or fail on a
    // broken CUDA context. Leaving them alive costs only memory until the process ends.
    communication_failed_ = e.code() == StatusCode::CommFailure || e.code() == StatusCode::DeviceError;
    KOLO_LOG(Error) << exit_status.message();
  } catch (const std::exception& e) {
    // Not a kolo::Error: nothing is known about what was under way.
    exit_status = Status(StatusCode::Internal, std::string("kolo: internal error: ") + e.what() + where_);
    communication_failed_ = true;
    KOLO_LOG(Error) << exit_status.message();
  }
  // The loop stopped for any reason but a stop every rank agreed on (a shutdown, a stall):
  // the other ranks cannot go on with this one, so the job ends. The watchdog hears of it
  // before the handles fail: a program that sees the error and exits at once must find the
  // runtime failed (its exit then ends the job), not still running.
  if (!agreed) watchdog_->failed(exit_status);
  const bool stopped_by_others = agreed && !shutdown_requested_;  // a stall, or a peer's shutdown
  if (stopped_by_others && !stopped_by_stall_) stopped_by_peer_shutdown_ = true;
  timeline_.flush_if_written();  // a rank that never comes back may end by _Exit
  fail_everything(exit_status);
  if (stopped_by_others && role_.on_stopped_by_others) role_.on_stopped_by_others(exit_status);
}

void Runtime::fail_everything(const Status& status) {
  std::vector<EntryPtr> queued = queue_.close(status);
  std::shared_ptr<detail::HandleState> join_handle;
  {
    std::lock_guard<std::mutex> lock(join_mutex_);
    join_handle.swap(join_handle_);
  }
  const auto did_not_run = [&](const TensorEntry& e) {
    return Status(status.code(), status.message() + " (tensor '" + e.request.name + "' did not run)");
  };
  for (EntryPtr& e : queued) e->handle.complete(did_not_run(*e));
  for (EntryPtr& entry : bit_entries_)
    if (entry) finish({entry.get()}, did_not_run(*entry));
  while (!in_flight_.empty()) {
    TensorEntry& e = *in_flight_.begin()->second;
    finish({&e}, did_not_run(e));
  }
  if (join_handle) join_handle->complete(status);
}

bool Runtime::has_pending() const {
  return !in_flight_.empty() ||
         std::any_of(waiting_bits_.begin(), waiting_bits_.end(), [](uint64_t word) { return word != 0; });
}

// Returns the table's reference to the entry: the entry lives on while the caller holds it.
EntryPtr Runtime::release(TensorEntry& entry) {
  if (entry.bit_slot >= 0) return std::move(bit_entries_[static_cast<std::size_t>(entry.bit_slot)]);
  auto it = in_flight_.find(entry.request.name);
  EntryPtr owned = std::move(it->second);
  in_flight_.erase(it);
  return owned;
}

// The names first (a caller may resubmit one the moment its handle is done), the callers
// next, the tables after: a resubmitted name is only looked at by this thread's next accept().
void Runtime::finish(const std::vector<TensorEntry*>& entries, const Status& status) {
  queue_.forget(entries);
  for (TensorEntry* e : entries)
    if (e != nullptr) e->handle.mark_done(status);
  // Woken only once all are done: a caller waiting on them in turn then sleeps once.
  for (TensorEntry* e : entries)
    if (e != nullptr) e->handle.wake_sleepers();
  for (TensorEntry* e : entries)
    if (e != nullptr) release(*e);
}

void Runtime::accept(std::vector<EntryPtr>& entries) {
  const auto now = clock_.now();
  std::size_t i = 0;
  while (i < entries.size()) {
    // The members of a group arrive together (they were pushed in one call).
    std::size_t end = i + 1;
    if (!entries[i]->request.group.empty())
      while (end < entries.size() && entries[end]->request.group == entries[i]->request.group) ++end;

    std::vector<std::optional<uint32_t>>& slots = incoming_slots_;
    slots.clear();
    bool all_hit = cache_.capacity() > 0;
    for (std::size_t k = i; k < end; ++k) {
      const Request& request = entries[k]->request;
      slots.push_back(cache_.find(request.name, entries[k]->name_hash));
      if (!slots.back() || !cacheable(request.type) || !(cache_.at(*slots.back()) == request)) all_hit = false;
    }
    for (std::size_t k = i; k < end; ++k) {
      const std::optional<uint32_t> slot = slots[k - i];
      if (all_hit) {
        TensorEntry& e = *entries[k];
        e.reported = now;
        e.bit_slot = static_cast<int32_t>(*slot);
        bit_entries_[*slot] = std::move(entries[k]);
        set_waiting(*slot, true);
      } else {
        // The other ranks may be waiting on this name's bit: make them send it by name.
        if (slot) invalidations_to_send_.push_back(*slot);
        to_send_.push_back(entries[k]->request.name);
        in_flight_.emplace(entries[k]->request.name, std::move(entries[k]));
      }
    }
    i = end;
  }
}

void Runtime::set_waiting(uint32_t slot, bool waiting) {
  const uint64_t bit = uint64_t{1} << (slot % 64);
  if (waiting) waiting_bits_[slot / 64] |= bit;
  else waiting_bits_[slot / 64] &= ~bit;
}

// The slot's entry, if one waits on it, goes to the named path.
void Runtime::invalidate(uint32_t slot) {
  cache_.erase(slot);
  send_by_name(slot);
}

// The entry waiting on the slot's bit, if any, no longer matches the slot: it goes by name.
void Runtime::send_by_name(uint32_t slot) {
  if (EntryPtr& entry = bit_entries_[slot]) {
    set_waiting(slot, false);
    entry->bit_slot = -1;
    to_send_.push_back(entry->request.name);
    in_flight_.emplace(entry->request.name, std::move(entry));
  }
}

bool Runtime::cycle() {
  queue_.take_all(incoming_);
  bool progressed = !incoming_.empty();
  accept(incoming_);

  bool joined;
  {
    std::lock_guard<std::mutex> lock(join_mutex_);
    joined = join_handle_ != nullptr;
  }
  const std::size_t bit_words = (static_cast<std::size_t>(cache_.capacity()) + 63) / 64;
  const std::size_t n = 2 + bit_words;
  // [flags | setting | bits] ANDed gives "on every rank"; [~flags | - | ~bits] ANDed gives
  // "on no rank", i.e. the complement of the OR. One small allreduce carries both. The
  // setting word is the autotuner's choice: rank 0 writes it, the others all ones.
  std::vector<uint64_t> words(2 * n, 0);
  uint64_t flags = 0;
  if (!to_send_.empty() || !invalidations_to_send_.empty() || !stalled_failures_.empty() ||
      joined != joined_reported_)
    flags |= kNeedSlowPath;
  if (shutdown_requested_) flags |= kShutdown;
  if (stop_after_global_stall_) flags |= kGlobalStall;
  if (joined) flags |= kJoined;
  words[0] = flags;
  words[1] = (autotuner_ && coordinator_) ? autotuner_->current() : ~uint64_t{0};
  std::copy(waiting_bits_.begin(), waiting_bits_.end(), words.begin() + 2);
  for (std::size_t i = 0; i < bit_words; ++i) words[n + 2 + i] = ~words[2 + i];
  words[n] = ~flags;
  words[n + 1] = ~uint64_t{0};
  if (joined) {  // a joined rank is ready for every allreduce the others are
    for (uint32_t slot = 0; slot < uint32_t(cache_.capacity()); ++slot)
      if (cache_.occupied(slot) && cache_.at(slot).type == OpType::Allreduce)
        words[2 + slot / 64] |= uint64_t{1} << (slot % 64);
  }

  control_.allreduce_and(words);
  const auto decided = clock_.now();
  const uint64_t flags_all = words[0];
  const uint64_t flags_any = ~words[n];
  // A process set stopping after the global set's stall runs nothing more: every rank of
  // the set sees the flag in this same cycle, and an operation submitted after the stall
  // failed must not run.
  if ((flags_any & kShutdown) && (flags_any & kGlobalStall)) {
    stopped_by_global_stall_ = true;
    return false;
  }
  if (autotuner_) apply_setting(words[1]);

  std::vector<uint64_t> partial(bit_words);
  std::vector<uint64_t>& ready = ready_bits_;
  ready.resize(bit_words);
  bool any_ready = false;
  for (std::size_t w = 0; w < bit_words; ++w) {
    const uint64_t anywhere = ~words[n + 2 + w];
    ready[w] = words[2 + w] & anywhere;
    partial[w] = anywhere & ~words[2 + w];
    any_ready = any_ready || ready[w] != 0;
  }
  if (any_ready) run_cached(ready, decided);
  progressed = progressed || any_ready;
  if (coordinator_) watch_partial_slots(partial);

  if (flags_any & kNeedSlowPath) {
    std::vector<uint32_t> invalidations;
    std::vector<Response> responses = slow_path(invalidations, joined);
    progressed = progressed || !responses.empty();
    for (const Response& r : responses) skip_used_automatic_names(r);
    const auto now = clock_.now();
    for (uint32_t slot : invalidations) invalidate(slot);
    // Record before running: running completes (and forgets) the local entries. A put that
    // evicts a slot leaves the new request in it; an entry waiting on the old one goes by name.
    const auto request_of = [this](const Response& r, std::size_t i) {
      auto it = in_flight_.find(r.names[i]);
      return it != in_flight_.end() ? it->second->request : request_for(r, i);
    };
    for (uint32_t slot : record_in_cache(cache_, responses, request_of)) send_by_name(slot);
    FusionPlan plan(fusion_);
    std::vector<std::vector<TensorEntry*>> entries;
    for (Response& r : responses) {
      auto it = in_flight_.find(r.names.front());
      const std::size_t index = plan.add(std::move(r));
      if (index == entries.size()) entries.emplace_back();
      entries[index].push_back(it == in_flight_.end() ? nullptr : it->second.get());
    }
    run(plan.take(), entries, now);
  }

  if (autotuner_ && coordinator_) autotune_step();

  if (flags_all & kJoined) {  // every rank has joined: join() returns everywhere
    std::shared_ptr<detail::HandleState> handle;
    {
      std::lock_guard<std::mutex> lock(join_mutex_);
      handle.swap(join_handle_);
    }
    joined_reported_ = false;
    progressed = true;
    if (coordinator_) coordinator_->end_join();
    if (handle) {
      handle->value = last_joined_;
      handle->complete(Status::OK());
    }
  }
  if (progressed) last_progress_ = clock_.now();
  return !(flags_any & kShutdown) && !stopped_by_stall_;
}

// Runs the cached tensors whose bits are set in `ready`, in slot order, fused.
void Runtime::run_cached(const std::vector<uint64_t>& ready, Clock::time_point decided) {
  const std::vector<Response>& responses = cached_plan(ready);
  cached_entries_.resize(responses.size());
  for (std::vector<TensorEntry*>& entries : cached_entries_) entries.clear();
  std::size_t index = 0;  // responses[index] takes the next tensors
  for_each_slot(ready, [&](uint32_t slot) {
    cache_.touch(slot);
    set_waiting(slot, false);
    if (cached_entries_[index].size() == responses[index].names.size()) ++index;
    cached_entries_[index].push_back(bit_entries_[slot].get());  // null where this rank has joined
  });
  run(responses, cached_entries_, decided);
}

// A steady loop has the same tensors ready every step: the last plan serves again while
// the ready set, the cached parameters and the fusion settings are those it was built
// from, as plan_cached would build the same responses again.
const std::vector<Response>& Runtime::cached_plan(const std::vector<uint64_t>& ready) {
  // The name only serves the timeline: a copy per tensor is worth skipping without it.
  const bool named = timeline_.enabled();
  if (ready == plan_.ready && cache_.version() == plan_.cache_version && fusion_ == plan_.fusion &&
      named == plan_.named)
    return plan_.responses;
  plan_ = CachedPlan{ready, cache_.version(), fusion_, named, plan_cached(cache_, ready, fusion_, named)};
  return plan_.responses;
}

std::vector<Response> Runtime::slow_path(std::vector<uint32_t>& invalidations, bool joined) {
  RequestList mine;
  const auto now = clock_.now();
  for (const std::string& name : to_send_) {
    TensorEntry& e = *in_flight_.at(name);
    e.reported = now;
    mine.requests.push_back(e.request);
  }
  mine.invalidate_slots = std::move(invalidations_to_send_);
  // Not join_handle_ as it is now: a join() since the cycle began is the next cycle's, or
  // it would be reported in the round of a rank that joined before it, and could count as
  // the first to join rather than the last.
  mine.joined = joined;
  joined_reported_ = joined;
  to_send_.clear();
  invalidations_to_send_.clear();

  std::vector<std::string> gathered = control_.gather(serialize(mine), 0);
  std::string answer;
  if (coordinator_) {
    ResponseList list;
    for (int rank = 0; rank < static_cast<int>(gathered.size()); ++rank) {
      RequestList theirs = parse_request_list(gathered[rank]);
      check_cache_slots(theirs.invalidate_slots, cache_.capacity(), "rank " + std::to_string(global_rank(rank)));
      coordinator_->add(rank, theirs, now);
      list.invalidate_slots.insert(list.invalidate_slots.end(), theirs.invalidate_slots.begin(),
                                   theirs.invalidate_slots.end());
    }
    std::sort(list.invalidate_slots.begin(), list.invalidate_slots.end());
    list.invalidate_slots.erase(std::unique(list.invalidate_slots.begin(), list.invalidate_slots.end()),
                                list.invalidate_slots.end());
    list.responses = coordinator_->take_ready();
    list.last_joined = coordinator_->last_joined();
    for (Response& failure : stalled_failures_) list.responses.push_back(std::move(failure));
    stalled_failures_.clear();
    answer = serialize(list);
  }
  control_.broadcast(answer, 0);
  ResponseList list = parse_response_list(answer);
  check_cache_slots(list.invalidate_slots, cache_.capacity(), "the coordinator");
  invalidations = std::move(list.invalidate_slots);
  last_joined_ = list.last_joined;
  return std::move(list.responses);
}

void Runtime::run(const std::vector<Response>& responses,
                  const std::vector<std::vector<TensorEntry*>>& entries, Clock::time_point decided) {
  for (std::size_t i = 0; i < responses.size(); ++i) {
    const Response& r = responses[i];
    Status status;
    std::shared_ptr<ops::Event> done;  // GPU work still running on the device
    if (r.kind == Response::Kind::Error) {
      status = Status(r.error_code, r.error_message);
      // A stall shutdown: some rank never submitted, and may never call anything again.
      // Every rank has this response in this cycle, so every rank stops after it, as
      // Horovod does: the operations still waiting fail, later ones fail at once, and a
      // program that sees the error can end as it chooses (docs/reliability.md).
      if (r.error_code == StatusCode::Stalled && !stopped_by_stall_) {
        stopped_by_stall_ = Status(StatusCode::Stalled, std::string("kolo has shut down ") +
                                                            (where_.empty() ? "on every rank" : "in this process set") +
                                                            " after a stall: " + stall_reason(r.error_message));
        stalled_ = true;
        if (role_.on_stall) role_.on_stall();
      }
    } else if (r.type != OpType::Allreduce && entries[i][0] == nullptr) {
      continue;  // cannot happen: the coordinator only releases these when every rank has them
    } else if (r.type == OpType::ProcessSet) {
      // Communicator splits and duplicates, blocking in MPI: watched as a data call, so that
      // a rank that stops here ends the job (with no piece to complete, a roll call tells a
      // slow set-up from a stuck one).
      const Watchdog::DataCall call = watchdog_->data_call(r, entries[i]);
      status = role_.on_process_set
                   ? role_.on_process_set(*entries[i][0], *transport_)
                   : Status(StatusCode::Internal, "kolo: a process set change reached a process set's runtime");
    } else {
      // A backend failure leaves the communicator in an unknown state: it propagates, the
      // loop stops and every pending handle fails (see loop()). A GPU path that cannot be
      // set up fails alike on every rank: only these tensors fail.
      const bool timed = autotuner_ && r.type == OpType::Allreduce;
      const Clock::time_point start = timed ? clock_.now() : Clock::time_point();
      try {
        const Watchdog::DataCall call = watchdog_->data_call(r, entries[i]);
        done = executor_->run(r, entries[i], decided);
      } catch (const GpuSetupError& e) {
        status = Status(e.code(), e.what());
      }
      if (timed) {
        cycle_allreduce_bytes_ += response_bytes(r);
        cycle_allreduce_seconds_ += std::chrono::duration<double>(clock_.now() - start).count();
      }
    }
    if (done) {
      defer(entries[i], std::move(done));
      continue;
    }
    finish(entries[i], status);
  }
}

// The work is enqueued on the device: the name is free again (later work on it is
// ordered after this on kolo's stream), and the handles complete when `done` is reached.
void Runtime::defer(const std::vector<TensorEntry*>& entries, std::shared_ptr<ops::Event> done) {
  std::vector<std::shared_ptr<detail::HandleState>> handles;
  queue_.forget(entries);
  for (TensorEntry* e : entries) {
    if (e == nullptr) continue;
    EntryPtr entry = release(*e);
    if (entry->handle.gpu) entry->handle.gpu->publish(done);
    handles.push_back(handle_of(entry));
  }
  completions_->add(std::move(done), std::move(handles));
}

void Runtime::apply_setting(uint64_t index) {
  if (index == applied_setting_) return;
  applied_setting_ = index;
  const TunedSetting& setting = autotuner_->setting(index);
  fusion_ = fusion_options(setting.fusion_threshold_bytes, setting.chunk_bytes, transport_->size());
  devices_->set_allreduce_chunk_bytes(setting.chunk_bytes);
}

void Runtime::autotune_step() {
  const bool was_done = autotuner_->done();
  autotuner_->record(cycle_allreduce_bytes_, cycle_allreduce_seconds_);
  cycle_allreduce_bytes_ = 0;
  cycle_allreduce_seconds_ = 0;
  if (was_done || !autotuner_->done()) return;
  const TunedSetting& best = autotuner_->setting(autotuner_->current());
  KOLO_LOG(Info) << "autotune chose fusion threshold " << best.fusion_threshold_bytes
                 << " bytes, allreduce pieces of " << best.chunk_bytes << " bytes";
  if (config_.autotune_log.empty()) return;
  // Written beside it and renamed into place: a reader (a script waiting for the search to
  // end) never finds the file half written.
  const std::string written = config_.autotune_log + ".tmp";
  bool ok = false;
  if (std::FILE* f = std::fopen(written.c_str(), "w")) {
    std::fputs("trial,fusion_threshold_bytes,chunk_bytes,bytes,seconds,GBps\n", f);
    for (const std::string& line : autotuner_->log()) std::fprintf(f, "%s\n", line.c_str());
    std::fprintf(f, "# chosen: trial %zu\n", autotuner_->current());
    ok = std::ferror(f) == 0;
    ok = std::fclose(f) == 0 && ok && std::rename(written.c_str(), config_.autotune_log.c_str()) == 0;
  }
  if (!ok) {
    std::remove(written.c_str());
    KOLO_LOG(Warning) << "cannot write KOLO_AUTOTUNE_LOG file '" << config_.autotune_log << "'";
  }
}

void Runtime::watch_partial_slots(const std::vector<uint64_t>& partial_bits) {
  const auto now = clock_.now();
  for (auto it = partial_since_.begin(); it != partial_since_.end();) {
    const uint32_t slot = it->first;
    if (!(partial_bits[slot / 64] >> (slot % 64) & 1)) it = partial_since_.erase(it);
    else ++it;
  }
  for (std::size_t w = 0; w < partial_bits.size(); ++w) {
    for (uint64_t bits = partial_bits[w]; bits; bits &= bits - 1) {
      const uint32_t slot = static_cast<uint32_t>(w * 64 + std::countr_zero(bits));
      auto [it, inserted] = partial_since_.try_emplace(slot, now);
      if (!inserted && now - it->second > kPartialSlotTimeout) {
        invalidations_to_send_.push_back(slot);
        partial_since_.erase(it);
      }
    }
  }
  if (config_.stall_check_enabled && now - last_stall_check_ > std::chrono::seconds(1)) {
    last_stall_check_ = now;
    Coordinator::StallReport report = coordinator_->inspect_stalls(
        now, std::chrono::duration<double>(config_.stall_check_seconds),
        std::chrono::duration<double>(config_.stall_shutdown_seconds));
    for (const std::string& warning : report.warnings) KOLO_LOG(Warning) << warning;
    for (Response& failure : report.failures) {
      KOLO_LOG(Error) << failure.error_message;
      stalled_failures_.push_back(std::move(failure));
    }
  }
}

}  // namespace kolo
