// Minimal leveled logging to stderr, prefixed with the rank: "[kolo 1] WARNING: ...".
#pragma once

#include <functional>
#include <sstream>
#include <string>

#include "config.h"

namespace kolo {

void set_log_level(LogLevel level);
void set_log_rank(int rank);
// The rank named by lines logged from the calling thread, in place of set_log_rank()'s (the
// runtime's background thread; each thread of an in-process job).
void set_thread_log_rank(int rank);
bool log_enabled(LogLevel level);
void log_message(LogLevel level, const std::string& message);

// Where lines go instead of stderr (tests read kolo's warnings this way); an empty function
// sends them to stderr again. `line` is the whole line, "[kolo 1] WARNING: ...".
using LogSink = std::function<void(LogLevel level, const std::string& line)>;
void set_log_sink(LogSink sink);

}  // namespace kolo

// KOLO_LOG(Warning) << "text " << value;  -- the stream is built only when enabled.
// (A for-loop rather than an if, so that a caller's own if/else cannot bind to it.)
#define KOLO_LOG(level)                                                                \
  for (bool kolo_log_once = ::kolo::log_enabled(::kolo::LogLevel::level); kolo_log_once; \
       kolo_log_once = false)                                                            \
  ::kolo::detail::LogLine(::kolo::LogLevel::level).stream()

namespace kolo::detail {
class LogLine {
 public:
  explicit LogLine(LogLevel level) : level_(level) {}
  ~LogLine() { log_message(level_, stream_.str()); }
  std::ostringstream& stream() { return stream_; }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};
}  // namespace kolo::detail
