// The rank shim: mpirun/srun start `kolorun --rank-exec program args` on every rank.
// It reports "this rank's process is running, on this host, with this pid" on its
// stderr, which mpirun/srun carry back tagged with the rank, then exec()s the program
// in place (same pid, same environment, no extra process). That report is how kolorun
// knows every rank has started (--start-timeout), and which processes to kill if the job
// does not end: the rank, and on other hosts also its parent (the Open MPI daemon that
// started it, remote_kill.h). A program that cannot be run is reported per rank.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace kolo::launcher {

inline constexpr const char* kRankExecFlag = "--rank-exec";

struct RankStart {
  std::string host;
  long pid = 0;
  unsigned long long start_ticks = 0;  // /proc/<pid>/stat field 22: tells pid reuse apart
  // The process that started the rank (orted, mpirun on its own host, slurmstepd); 0 when
  // unknown (a report without it, or a rank already orphaned).
  long parent_pid = 0;
  unsigned long long parent_start_ticks = 0;
};

// "kolorun-rank-started host=H pid=P start=T parent=Q parent_start=U", one line. The
// parser ignores words it does not know and takes a line without the parent's fields.
std::string format_start_marker(const RankStart& start);
std::optional<RankStart> parse_start_marker(std::string_view line);

// When `pid` started, in clock ticks after boot; 0 when there is no such process.
unsigned long long process_start_ticks(long pid);
// Whether the rank's process (on this host) still runs: the same process (its start time
// tells a reused pid apart), neither exited nor a zombie.
bool rank_still_running(const RankStart& start);
std::string this_host_name();

// Runs the shim: `args` is the program and its arguments. Returns only on failure (127).
int rank_exec_main(int argc, char** argv);

}  // namespace kolo::launcher
