// Chrome-trace JSON (chrome://tracing, Perfetto) of what the background thread did to
// each tensor: one lane per tensor name with its phases (NEGOTIATE, WAIT_FOR_OTHERS,
// MEMCPY_IN, the collective, MEMCPY_OUT), and one lane of fused groups. Written only by
// the background thread; the file is a complete JSON array once close() has run.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>
#include <unordered_map>
#include <vector>

namespace kolo {

class Timeline {
 public:
  using Clock = std::chrono::steady_clock;

  Timeline() = default;
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  // Throws kolo::Error if the file cannot be created. Times are written relative to
  // `origin`, on the clock the times given later come from.
  void open(const std::string& path, int rank, Clock::time_point origin = Clock::now());
  bool enabled() const { return file_ != nullptr; }
  void close();

  // One phase of one tensor, from start to end. `args` is a JSON object body or empty.
  void phase(const std::string& tensor, const char* phase, Clock::time_point start,
             Clock::time_point end, const std::string& args = "");
  // A fused group on its own lane: which tensors went through one buffer.
  void fused_group(int64_t group_id, const std::vector<std::string>& tensors, int64_t bytes,
                   Clock::time_point start, Clock::time_point end);
  // An instant CYCLE_START marker across the whole trace (KOLO_TIMELINE_MARK_CYCLES), as
  // Horovod draws one: the gaps between markers show how long the cycles took.
  void cycle_start(Clock::time_point when);

 private:
  int lane(const std::string& tensor);
  double micros(Clock::time_point t) const;  // since open()
  void write_event(const char* name, int tid, Clock::time_point start, Clock::time_point end,
                   const std::string& args);

  std::FILE* file_ = nullptr;
  int pid_ = 0;
  Clock::time_point origin_;
  std::unordered_map<std::string, int> lanes_;
  bool first_event_ = true;
};

std::string json_escape(const std::string& text);

}  // namespace kolo
