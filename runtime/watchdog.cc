#include "watchdog.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "logging.h"

namespace kolo {
namespace {

std::string seconds_text(std::chrono::milliseconds d) {
  std::ostringstream out;
  out << static_cast<double>(d.count()) / 1000.0 << " s";
  return out.str();
}

// "allreduce of 'grad/fc1'", "allreduce of 'grad/fc1' and 11 more tensors". A response
// from the cache carries no names (the runtime skips the copies); the entries have them.
std::string describe(const Response& r, const std::vector<TensorEntry*>& entries) {
  std::string text = std::string(op_type_name(r.type));
  std::string first = r.names.empty() ? "" : r.names.front();
  for (const TensorEntry* e : entries)
    if (first.empty() && e != nullptr) first = e->request.name;
  if (first.empty()) return text;
  text += " of '" + first + "'";
  const std::size_t count = std::max(r.names.size(), entries.size());
  if (count > 1) text += " and " + std::to_string(count - 1) + " more tensors";
  return text;
}

std::string ranks_text(const std::vector<int>& ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text;
}

}  // namespace

Watchdog::Watchdog(Transport& transport, WatchdogSettings settings, const Clock& clock)
    : transport_(transport), settings_(std::move(settings)), clock_(clock) {
  thread_ = std::thread(&Watchdog::loop, this);
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

Watchdog::DataCall Watchdog::data_call(const Response& response, const std::vector<TensorEntry*>& entries) {
  const auto now = clock_.now();
  std::lock_guard<std::mutex> lock(mutex_);
  call_ = &response;
  call_entries_ = &entries;
  call_progress_ = progress_.load(std::memory_order_relaxed);
  call_moved_ = now;
  return DataCall(*this);
}

Watchdog::DataCall::~DataCall() {
  std::lock_guard<std::mutex> lock(watchdog_.mutex_);
  watchdog_.call_ = nullptr;
}

void Watchdog::failed(const Status& status) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failure_) return;
    failure_ = status;
    grace_ends_ = clock_.now() + settings_.grace;
  }
  wake_.notify_all();
}

bool Watchdog::has_failed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_.has_value();
}

void Watchdog::end_now() {
  std::string why;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failure_ || !transport_.failures_end_job()) return;
    why = failure_->message() + " (the program ended after the error)";
  }
  end_job(why);
}

void Watchdog::loop() {
  set_thread_log_rank(global_rank(transport_.rank()));
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    // A failure is acted on at once: its roll call runs while the program has its grace.
    ops::wait_until(clock_, wake_, lock, clock_.now() + settings_.tick,
                    [&] { return stop_ || (failure_ && !silent_); });
    if (stop_ || ended_) break;
    lock.unlock();
    transport_.answer_roll_call();
    lock.lock();
    const auto now = clock_.now();
    std::optional<std::string> why;
    if (call_ != nullptr) {
      const uint64_t progress = progress_.load(std::memory_order_relaxed);
      if (progress != call_progress_) {
        call_progress_ = progress;
        call_moved_ = now;
      } else if (now - call_moved_ > settings_.data_timeout) {
        // Stuck for good, or only slow (a large allgather in one piece on a slow link, a
        // node's non-leaders waiting while their leader works)? A roll call tells: ranks
        // that still answer get another data timeout; one that does not ends the job.
        const Response* stuck = call_;
        const std::string what = describe(*call_, *call_entries_);
        lock.unlock();
        std::vector<int> silent = transport_.roll_call(liveness_bound());
        lock.lock();
        if (call_ != stuck || progress_.load(std::memory_order_relaxed) != call_progress_) continue;  // it moved
        if (silent.empty()) {
          KOLO_LOG(Warning) << "kolo: " << what << " has made no progress for " << seconds_text(settings_.data_timeout)
                            << " (KOLO_DATA_TIMEOUT_SECONDS), but every rank answers a roll call: waiting on";
          call_moved_ = clock_.now();
          continue;
        }
        std::call_once(roll_call_once_, [&] {
          silent_ = std::move(silent);
          silent_within_ = liveness_bound();
        });
        why = "kolo: " + what + " made no progress for " + seconds_text(settings_.data_timeout) +
              " (KOLO_DATA_TIMEOUT_SECONDS): a rank has died, hung, or lost its network link";
      }
    }
    if (!why && failure_ && now >= grace_ends_ && transport_.failures_end_job()) why = failure_->message();
    if (!why && failure_ && !silent_) {
      lock.unlock();
      hold_roll_call();
      lock.lock();
      continue;
    }
    if (why) {
      lock.unlock();
      end_job(*why);
      lock.lock();
    }
  }
}

void Watchdog::hold_roll_call() {
  std::call_once(roll_call_once_, [this] {
    std::vector<int> silent = transport_.roll_call(settings_.roll_call_bound);
    std::lock_guard<std::mutex> lock(mutex_);
    silent_ = std::move(silent);
    silent_within_ = settings_.roll_call_bound;
  });
}

// Longer than a failure's roll call: on a slow link the question and its answer travel
// behind the bytes MPI has already queued on the same TCP connections, and ending a healthy
// job is worse than a late end. What can queue there is one piece of a collective (ops'
// MPI backend cuts every large one): measured before allgathers ran in pieces, a 1-byte
// answer waited over 2 s behind one 16 MiB allgather at 40 Mbit/s. The roll call returns
// as soon as every rank has answered.
std::chrono::milliseconds Watchdog::liveness_bound() const {
  return std::max(settings_.roll_call_bound, settings_.data_timeout / 4);
}

int Watchdog::global_rank(int set_rank) const {
  return settings_.global_ranks.empty() ? set_rank : settings_.global_ranks.at(static_cast<std::size_t>(set_rank));
}

void Watchdog::end_job(const std::string& why) {
  hold_roll_call();
  std::vector<int> silent;
  std::chrono::milliseconds within{0};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (ended_) return;
    ended_ = true;
    silent = *silent_;
    within = silent_within_;
  }
  for (int& rank : silent) rank = global_rank(rank);
  const std::string answered =
      silent.empty() ? "every rank answered a roll call"
                     : ranks_text(silent) + " did not answer a roll call within " + seconds_text(within);
  set_thread_log_rank(global_rank(transport_.rank()));  // end_now() runs on the program's thread
  if (settings_.before_end) settings_.before_end();
  KOLO_LOG(Fatal) << why << "; " << answered << "; ending the job (exit code " << kJobFailedExitCode << ")";
  transport_.end_job(kJobFailedExitCode);
}

}  // namespace kolo
