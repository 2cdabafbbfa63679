#include "logging.h"

#include <atomic>
#include <cctype>
#include <cstdio>
#include <mutex>

namespace kolo {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::Warning)};
std::atomic<int> g_rank{-1};
thread_local int t_rank = -1;  // -1: g_rank
std::mutex g_sink_mutex;
LogSink g_sink;  // guarded by g_sink_mutex
}  // namespace

void set_log_level(LogLevel level) { g_level = static_cast<int>(level); }
void set_log_rank(int rank) { g_rank = rank; }
void set_thread_log_rank(int rank) { t_rank = rank; }
bool log_enabled(LogLevel level) { return static_cast<int>(level) >= g_level.load(); }

void set_log_sink(LogSink sink) {
  std::lock_guard<std::mutex> lock(g_sink_mutex);
  g_sink = std::move(sink);
}

void log_message(LogLevel level, const std::string& message) {
  std::string tag = log_level_name(level);
  for (char& c : tag) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const int rank = t_rank >= 0 ? t_rank : g_rank.load();
  {
    std::lock_guard<std::mutex> lock(g_sink_mutex);
    if (g_sink) {
      g_sink(level, "[kolo " + std::to_string(rank) + "] " + tag + ": " + message);
      return;
    }
  }
  // One fprintf per line so that lines from the two threads never interleave.
  std::fprintf(stderr, "[kolo %d] %s: %s\n", rank, tag.c_str(), message.c_str());
}

}  // namespace kolo
