// After a failed job: which rank failed and how, read from mpirun's or srun's own
// messages, and the report kolorun prints with that rank's last lines.
#pragma once

#include <deque>
#include <optional>
#include <string>

#include "command.h"
#include "failure_signs.h"
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
// The same for one line; `next_line` (may be null) is the line after it.
std::optional<RankFailure> rank_failure_in_line(const std::string& line, const std::string* next_line);

// The job's exit status for kolorun: the failed rank's code (128 + signal when killed),
// else the launcher's own code; never 0 for a failed job.
int job_exit_code(const std::optional<RankFailure>& failure, int launcher_exit_code);

// The host whose daemon mpirun lost ("ORTE has lost communication with a remote daemon",
// then "Remote daemon: [[10520,0],1] on node node1"): the host, or its link, failed.
std::optional<std::string> find_lost_host(const std::deque<std::string>& launcher_lines);
// "kolorun: mpirun lost its daemon on node1 (ranks 2, 3 run there): ..."
std::string describe_lost_host(const std::string& host, const JobOutput& output, int launcher_exit_code);

// "kolorun: kolo on rank 0 (on vm) ended the job: <why>; rank 2 did not answer its roll
// call; rank 2's last lines:" and those lines (of the first silent rank, else rank 0's).
std::string describe_kolo_fatal(const KoloFatal& fatal, const JobOutput& output);

// "kolorun: rank 1 (on vm) exited with code 3; its last lines:" and those lines, or
// "kolorun: mpirun exited with code 1" when no rank can be named.
std::string describe_job_failure(const std::optional<RankFailure>& failure,
                                 const JobOutput& output, Launcher launcher,
                                 int launcher_exit_code);

}  // namespace kolo::launcher
