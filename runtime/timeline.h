// Chrome-trace JSON (chrome://tracing, Perfetto) of what the background thread did to
// each tensor: one lane per tensor name with its phases (NEGOTIATE_<OP>, WAIT_FOR_OTHERS,
// MEMCPY_IN, the collective, MEMCPY_OUT), and one lane of fused groups. One timeline serves
// every process set of a rank (each event names its set), so the background threads of
// several sets write to it, and the program may open or close it while they do
// (start_timeline()): every call takes the timeline's lock. The file is a complete JSON
// array once close() has run.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace kolo {

// The file rank `rank` writes for KOLO_TIMELINE=path (or start_timeline(path)): rank 0
// writes `path`, the others nothing, as Horovod does; a path that names "{rank}" is every
// rank's, with its rank in place of each "{rank}" (one file per rank: to see the ranks'
// step times side by side). Empty path: none.
std::optional<std::string> timeline_file_of(const std::string& path, int rank);

class Timeline {
 public:
  using Clock = std::chrono::steady_clock;

  Timeline() = default;
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  // Throws kolo::Error if the file cannot be created. Times are written relative to
  // `origin`, on the clock the times given later come from. An open file is closed first.
  // `mark_cycles`: whether cycle_start() marks are wanted (KOLO_TIMELINE_MARK_CYCLES).
  void open(const std::string& path, int rank, Clock::time_point origin = Clock::now(),
            bool mark_cycles = false);
  // A hint for skipping work (names, clock reads): the timeline may close right after.
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }
  bool marks_cycles() const { return enabled() && mark_cycles_.load(std::memory_order_relaxed); }
  void close();
  // Writes what is buffered to the file: before the process ends without destructors
  // (the watchdog's end of a job), so that the tail, the part that shows the failure, is
  // there. The file is still open, without its closing "]", which trace viewers accept.
  // Events are also written out at least every second on their own.
  void flush();
  // Writes out the events written since the last flush, if any (cycle markers alone do not
  // count): the background thread calls it before it sleeps, idle or stalled, so that a
  // program reading the file meanwhile finds the last collectives there (Horovod's test
  // suite reads it 0.1 s after an allreduce).
  void flush_if_written();

  // One phase of one tensor of process set `set`, from start to end. `args` is a JSON
  // object body or empty.
  void phase(int set, const std::string& tensor, const char* phase, Clock::time_point start,
             Clock::time_point end, const std::string& args = "");
  // A fused group on its own lane: which tensors went through one buffer.
  void fused_group(int set, int64_t group_id, const std::vector<std::string>& tensors, int64_t bytes,
                   Clock::time_point start, Clock::time_point end);
  // An instant CYCLE_START marker across the whole trace (KOLO_TIMELINE_MARK_CYCLES), as
  // Horovod draws one: the gaps between markers show how long the cycles took.
  void cycle_start(Clock::time_point when);

 private:
  void close_locked();
  int lane(int set, const std::string& tensor);
  double micros(Clock::time_point t) const;  // since open()
  void write_event(const char* name, int tid, Clock::time_point start, Clock::time_point end,
                   const std::string& args);

  std::mutex mutex_;  // guards everything below
  std::atomic<bool> enabled_{false};
  std::atomic<bool> mark_cycles_{false};
  std::FILE* file_ = nullptr;
  int pid_ = 0;
  Clock::time_point origin_;
  std::unordered_map<std::string, int> lanes_;  // by "<set>/<tensor>"
  bool first_event_ = true;
  bool unflushed_ = false;     // events written since the last flush
  Clock::time_point flushed_;  // the last event's end when the file was last flushed
};

std::string json_escape(const std::string& text);

}  // namespace kolo
