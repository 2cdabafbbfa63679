#include "process_sets.h"

#include <algorithm>
#include <optional>

#include "logging.h"
#include "watchdog.h"

namespace kolo {
namespace {

// A process set's role: its id and ranks; the callbacks are the global set's.
SetRole set_role(int id, const std::vector<int>& ranks) {
  SetRole role;
  role.id = id;
  role.global_ranks = ranks;
  return role;
}

std::string comma_list(const std::vector<int>& ranks) {
  std::string s;
  for (std::size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

// Appended rather than "[" + list: GCC 12 warns falsely (-Wrestrict) on that operator+.
std::string ranks_text(const std::vector<int>& ranks) { return std::string("[").append(comma_list(ranks)) + "]"; }

std::string sets_text(const std::vector<std::vector<int>>& sets) {
  std::string s = "[";
  for (std::size_t i = 0; i < sets.size(); ++i) s += (i ? ", " : "") + ranks_text(sets[i]);
  return s + "]";
}

std::vector<int> sorted(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

// Collective: every rank throws, with the same message, unless every rank was given the
// same sets (each set's ranks in any order). Compared before anything else is checked, so
// that the checks that follow give the same answer everywhere.
void agree_on_static_sets(const std::vector<std::vector<int>>& sets, ops::ControlChannel& control) {
  std::vector<std::vector<int>> canonical;
  for (const std::vector<int>& set : sets) canonical.push_back(sorted(set));
  std::vector<std::string> all = control.gather(sets_text(canonical), 0);
  std::string error;
  if (control.rank() == 0) {
    std::vector<std::pair<std::string, std::vector<int>>> values;  // by first appearance
    for (int r = 0; r < static_cast<int>(all.size()); ++r) {
      auto it = std::find_if(values.begin(), values.end(), [&](auto& v) { return v.first == all[r]; });
      if (it == values.end()) values.push_back({all[r], {r}});
      else it->second.push_back(r);
    }
    if (values.size() > 1) {
      error = "kolo: ranks were given different process sets at init():";
      for (std::size_t i = 0; i < values.size(); ++i)
        error += std::string(i ? ";" : "") + " rank" + (values[i].second.size() > 1 ? "s " : " ") +
                 comma_list(values[i].second) + " gave " +
                 values[i].first;
    }
  }
  control.broadcast(error, 0);
  if (!error.empty()) throw Error(StatusCode::InvalidArgument, error);
}

// Rank 0 opens the timeline, or every rank its own when the path names "{rank}"; if one
// cannot, every rank fails with the first failing rank's code and reason (instead of the
// others waiting for a rank that never starts).
void open_timeline(Timeline& timeline, const Config& config, ops::ControlChannel& control, const Clock& clock) {
  Status opened;
  const std::optional<std::string> path =
      config.timeline_path == "DYNAMIC" ? std::nullopt : timeline_file_of(config.timeline_path, control.rank());
  if (path) {
    try {
      timeline.open(*path, control.rank(), clock.now(), config.timeline_mark_cycles);
    } catch (const Error& e) {
      opened = Status(e.code(), e.what());
    }
  }
  std::vector<std::string> statuses = control.gather(serialize(opened), 0);
  std::string message = serialize(Status());
  for (const std::string& status : statuses)
    if (!parse_status(status).ok()) {
      message = status;
      break;
    }
  control.broadcast(message, 0);
  opened = parse_status(message);
  if (!opened.ok()) throw Error(opened.code(), opened.message());
}

}  // namespace

std::vector<std::vector<int>> checked_process_sets(std::vector<std::vector<int>> sets, int size) {
  const auto bad = [](std::size_t entry, const std::vector<int>& set, const std::string& why) {
    return Error(StatusCode::InvalidArgument, "kolo: process set entry " + std::to_string(entry + 1) + ", " +
                                                  ranks_text(set) + ", " + why);
  };
  for (std::size_t i = 0; i < sets.size(); ++i) {
    const std::vector<int> given = sets[i];
    std::vector<int>& set = sets[i];
    std::sort(set.begin(), set.end());
    if (set.empty()) throw bad(i, given, "has no ranks");
    if (set.front() < 0 || set.back() >= size)
      throw bad(i, given, "names a rank outside the job (ranks run from 0 to " + std::to_string(size - 1) + ")");
    if (std::adjacent_find(set.begin(), set.end()) != set.end()) throw bad(i, given, "names a rank twice");
    if (static_cast<int>(set.size()) == size)
      throw bad(i, given, "is the global set (id 0, every rank): list only other sets");
    for (std::size_t j = 0; j < i; ++j)
      if (sets[j] == set)
        throw bad(i, given, "is listed twice (also entry " + std::to_string(j + 1) + "): list each set once");
  }
  return sets;
}

ProcessSets::ProcessSets(std::unique_ptr<Transport> transport, const Config& config, const Clock& clock,
                         const std::vector<std::vector<int>>& static_sets,
                         std::function<void(const Status& why)> on_stopped_by_others)
    : clock_(clock) {
  agree_on_static_sets(static_sets, transport->control());
  const std::vector<std::vector<int>> sets = checked_process_sets(static_sets, transport->size());
  open_timeline(timeline_, config, transport->control(), clock_);
  // Before the global runtime's thread starts: subset() is collective over its transport.
  std::vector<std::unique_ptr<Transport>> subsets;
  if (!sets.empty()) {
    // The splits block in MPI with no bound of their own, and no runtime's watchdog runs
    // yet: one of their own watches them as a data call, so that a rank that stops here
    // ends the job as it would in a collective.
    WatchdogSettings watch;
    watch.data_timeout = config.data_timeout();
    Watchdog watchdog(*transport, std::move(watch), clock_);
    Response making;
    making.type = OpType::ProcessSet;
    making.names = {"init()'s static process sets"};
    const std::vector<TensorEntry*> no_entries;
    const Watchdog::DataCall call = watchdog.data_call(making, no_entries);
    for (const std::vector<int>& set : sets) subsets.push_back(transport->subset(set));
  }
  SetRole global_role;
  global_role.on_process_set = [this](TensorEntry& entry, Transport& t) { return change(entry, t); };
  global_role.on_stopped_by_others = std::move(on_stopped_by_others);
  // Every rank's global runtime stops in the same cycle, so every rank of a set asks its
  // set's runtime to stop: none waits in the set for a rank that went on.
  global_role.on_stall = [this] {
    for (const std::shared_ptr<Runtime>& r : runtimes()) r->stop_after_global_stall();
  };
  global_ = std::make_shared<Runtime>(std::move(transport), config, clock_, timeline_, std::move(global_role));
  for (std::size_t i = 0; i < sets.size(); ++i) {
    const int id = next_id_++;
    Set& set = sets_[id];
    set.ranks = sets[i];
    if (subsets[i])
      set.runtime = std::make_shared<Runtime>(std::move(subsets[i]), global_->config(), clock_, timeline_,
                                              set_role(id, sets[i]));
  }
}

ProcessSets::~ProcessSets() {
  shutdown();
  timeline_.close();
}

std::shared_ptr<Runtime> ProcessSets::runtime(int id, Status& why_not) const {
  if (id == 0) return global_;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = sets_.find(id);
  if (it == sets_.end()) {
    why_not = Status(StatusCode::InvalidArgument, "kolo: there is no process set " + std::to_string(id) +
                                                      (id > 0 && id < next_id_ ? " (it was removed)" : ""));
    return nullptr;
  }
  if (!it->second.runtime)
    why_not = Status(StatusCode::InvalidArgument,
                     "kolo: rank " + std::to_string(global_->transport().rank()) + " is not in process set " +
                         std::to_string(id) + " (ranks " + comma_list(it->second.ranks) +
                         "); only its ranks may submit to it");
  return it->second.runtime;
}

std::map<int, std::vector<int>> ProcessSets::table() const {
  std::map<int, std::vector<int>> table;
  std::vector<int> all(static_cast<std::size_t>(global_->transport().size()));
  for (int r = 0; r < static_cast<int>(all.size()); ++r) all[static_cast<std::size_t>(r)] = r;
  table[0] = std::move(all);
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [id, set] : sets_) table[id] = set.ranks;
  return table;
}

std::optional<std::vector<int>> ProcessSets::ranks(int id) const {
  std::map<int, std::vector<int>> all = table();
  auto it = all.find(id);
  if (it == all.end()) return std::nullopt;
  return it->second;
}

std::vector<std::shared_ptr<Runtime>> ProcessSets::runtimes() const {
  std::vector<std::shared_ptr<Runtime>> runtimes;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [id, set] : sets_)
    if (set.runtime) runtimes.push_back(set.runtime);
  return runtimes;
}

void ProcessSets::caller_waits() {
  global_->caller_waits();
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [id, set] : sets_)
    if (set.runtime) set.runtime->caller_waits();
}

// A set's runtime stops when any of its ranks asks (Runtime::cycle), so ranks that stop
// their sets in different orders never wait for each other.
void ProcessSets::shutdown() {
  for (const std::shared_ptr<Runtime>& r : runtimes()) r->shutdown();
  global_->shutdown();
}

bool ProcessSets::stopped_by_other_ranks() const {
  if (global_->stopped_by_stall() || global_->stopped_by_peer_shutdown()) return true;
  const std::vector<std::shared_ptr<Runtime>> sets = runtimes();
  return std::any_of(sets.begin(), sets.end(), [](const auto& r) { return r->stopped_by_peer_shutdown(); });
}

bool ProcessSets::failed() const {
  if (global_->failed()) return true;
  for (const std::shared_ptr<Runtime>& r : runtimes())
    if (r->failed()) return true;
  return false;
}

void ProcessSets::end_job_after_failure() {
  for (const std::shared_ptr<Runtime>& r : runtimes())
    if (r->failed()) r->end_job_after_failure();
  global_->end_job_after_failure();
}

Status ProcessSets::change(TensorEntry& entry, Transport& transport) {
  const ProcessSetChange& change = entry.request.process_set_change;
  if (change.action == ProcessSetChange::Action::Add)
    return add(std::vector<int>(change.ranks.begin(), change.ranks.end()), entry, transport);
  return remove(change.set_id);
}

Status ProcessSets::add(const std::vector<int>& ranks, TensorEntry& entry, Transport& transport) {
  int id = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [existing, set] : sets_)
      if (set.ranks == ranks)
        return Status(StatusCode::InvalidArgument, "kolo: process set " + ranks_text(ranks) +
                                                       " already exists (id " + std::to_string(existing) + ")");
    id = next_id_++;
  }
  std::unique_ptr<Transport> subset = transport.subset(ranks);  // collective over the global set
  std::shared_ptr<Runtime> runtime;
  if (subset)
    runtime = std::make_shared<Runtime>(std::move(subset), global_->config(), clock_, timeline_,
                                        set_role(id, ranks));
  std::lock_guard<std::mutex> lock(mutex_);
  sets_[id] = Set{ranks, std::move(runtime)};
  entry.handle.value = id;
  return Status::OK();
}

Status ProcessSets::remove(int id) {
  if (id == 0) return Status(StatusCode::InvalidArgument, "kolo: the global process set (id 0) cannot be removed");
  std::shared_ptr<Runtime> runtime;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = sets_.find(id);
    if (it == sets_.end())
      return Status(StatusCode::InvalidArgument, "kolo: there is no process set " + std::to_string(id) + " to remove");
    runtime = std::move(it->second.runtime);
    sets_.erase(it);
  }
  // Its pending operations fail with Aborted; callers still holding it keep it alive.
  if (runtime) runtime->shutdown();
  return Status::OK();
}

}  // namespace kolo
