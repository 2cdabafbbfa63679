#include "logging.h"

#include <atomic>
#include <cctype>
#include <cstdio>

namespace kolo {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::Warning)};
std::atomic<int> g_rank{-1};
}  // namespace

void set_log_level(LogLevel level) { g_level = static_cast<int>(level); }
void set_log_rank(int rank) { g_rank = rank; }
bool log_enabled(LogLevel level) { return static_cast<int>(level) >= g_level.load(); }

void log_message(LogLevel level, const std::string& message) {
  std::string tag = log_level_name(level);
  for (char& c : tag) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  // One fprintf per line so that lines from the two threads never interleave.
  std::fprintf(stderr, "[kolo %d] %s: %s\n", g_rank.load(), tag.c_str(), message.c_str());
}

}  // namespace kolo
