// After a failed job: which rank failed and how, read from mpirun's or srun's own
// messages, and the report kolorun prints with that rank's last lines.
#pragma once

#include <deque>
#include <optional>
#include <string>

#include "command.h"
#include "job_output.h"

namespace kolo::launcher {

struct RankFailure {
  int rank = 0;
  std::string host;            // empty when the message does not say
  std::optional<int> exit_code;
  std::optional<int> signal;   // the rank was killed by this signal
};

// Recognises, from Open MPI 4.1's mpirun:
//   "Process name: [[9249,1],1]" followed by "Exit code:    3"
//   "mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed)."
// and from srun (--label or not):
//   "srun: error: node0: task 1: Exited with exit code 3"
//   "srun: error: node0: tasks 0-1: Killed"
std::optional<RankFailure> find_rank_failure(const std::deque<std::string>& launcher_lines);

// The job's exit status for kolorun: the failed rank's code (128 + signal when killed),
// else the launcher's own code; never 0 for a failed job.
int job_exit_code(const std::optional<RankFailure>& failure, int launcher_exit_code);

// "kolorun: rank 1 (on vm) exited with code 3; its last lines:" and those lines, or
// "kolorun: mpirun exited with code 1" when no rank can be named.
std::string describe_job_failure(const std::optional<RankFailure>& failure,
                                 const JobOutput& output, Launcher launcher,
                                 int launcher_exit_code);

}  // namespace kolo::launcher
