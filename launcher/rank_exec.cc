#include "rank_exec.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

namespace kolo::launcher {
namespace {

constexpr std::string_view kMarker = "kolorun-rank-started ";

void write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

std::string rank_text() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID"})
    if (const char* value = std::getenv(name)) return value;
  return "?";
}

struct ProcessStat {
  char state = '?';
  unsigned long long start_ticks = 0;
};

// /proc/<pid>/stat's fields 3 (state) and 22 (start time); nullopt when there is no such process.
std::optional<ProcessStat> read_process_stat(long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat) || stat.rfind(')') == std::string::npos) return std::nullopt;
  // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  ProcessStat result;
  std::string field;
  for (int number = 3; number <= 22 && fields >> field; ++number) {
    if (number == 3) result.state = field[0];
    if (number == 22) result.start_ticks = std::stoull(field);
  }
  return result;
}

}  // namespace

std::string format_start_marker(const RankStart& start) {
  return std::string(kMarker) + "host=" + start.host + " pid=" + std::to_string(start.pid) +
         " start=" + std::to_string(start.start_ticks) + " parent=" + std::to_string(start.parent_pid) +
         " parent_start=" + std::to_string(start.parent_start_ticks);
}

std::optional<RankStart> parse_start_marker(std::string_view line) {
  if (line.substr(0, kMarker.size()) != kMarker) return std::nullopt;
  std::istringstream words(std::string(line.substr(kMarker.size())));
  RankStart start;
  bool has_host = false, has_pid = false;
  for (std::string word; words >> word;) {
    const size_t eq = word.find('=');
    const std::string key = word.substr(0, eq), value = eq == std::string::npos ? "" : word.substr(eq + 1);
    try {
      if (key == "host") start.host = value, has_host = true;
      if (key == "pid") start.pid = std::stol(value), has_pid = true;
      if (key == "start") start.start_ticks = std::stoull(value);
      if (key == "parent") start.parent_pid = std::stol(value);
      if (key == "parent_start") start.parent_start_ticks = std::stoull(value);
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  if (!has_host || !has_pid) return std::nullopt;
  return start;
}

unsigned long long process_start_ticks(long pid) {
  const std::optional<ProcessStat> stat = read_process_stat(pid);
  return stat ? stat->start_ticks : 0;
}

bool rank_still_running(const RankStart& start) {
  const std::optional<ProcessStat> stat = read_process_stat(start.pid);
  return stat && start.start_ticks != 0 && stat->start_ticks == start.start_ticks && stat->state != 'Z' &&
         stat->state != 'X';
}

std::string this_host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "?";
  return name;
}

int rank_exec_main(int argc, char** argv) {
  if (argc < 1) {
    write_all(2, "kolorun --rank-exec: no program given\n");
    return 127;
  }
  const long pid = ::getpid();
  // Under init (pid 1) the rank is already orphaned: init is nobody's to kill.
  const long parent = ::getppid() > 1 ? ::getppid() : 0;
  write_all(2, format_start_marker({this_host_name(), pid, process_start_ticks(pid), parent,
                                    parent ? process_start_ticks(parent) : 0}) +
                   "\n");
  ::execvp(argv[0], argv);
  const int error = errno;
  write_all(2, "kolorun: rank " + rank_text() + " on " + this_host_name() +
                   ": cannot run '" + argv[0] + "': " + std::strerror(error) + "\n");
  return 127;
}

}  // namespace kolo::launcher
