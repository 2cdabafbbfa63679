// The lines of a job's output that say a rank has failed, recognised as they arrive: from
// then on kolorun gives the job --kill-after-failure seconds to end before it kills what
// is still running (supervisor.h). What each launcher really prints (Open MPI 4.1, Slurm
// 22.05; tests/launcher/failure_signs_test.cc has the measured lines):
//   kolo's watchdog, on a rank:
//     "[kolo 0] FATAL: <why>; rank 2 did not answer a roll call within 2 s; ending the job (exit code 70)"
//   mpirun:
//     "mpirun noticed that process rank 2 with PID 0 on node vm exited on signal 9 (Killed)."
//     "Process name: [[3335,1],0]" (a rank exited non-zero; "Exit code: 1" follows)
//     "MPI_ABORT was invoked on rank 1 in communicator MPI_COMM_WORLD" (under srun, on the rank)
//     "ORTE has lost communication with a remote daemon."
//   srun:
//     "srun: error: node1: task 2: Killed", "srun: error: node0: tasks 0-1: Exited with exit code 70"
//     "srun: Job step aborted: Waiting up to 7 seconds for job step to finish."
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kolo::launcher {

// What `text`, one line (or piece) of a rank's or the launcher's output, says.
enum class FailureSign {
  None,
  KoloFatal,   // kolo is ending the job; parse_kolo_fatal() has who did not answer
  RankFailed,  // the launcher names a rank that died or exited non-zero
  Aborting,    // the job is being aborted (MPI_ABORT, a lost daemon, srun's step)
};
FailureSign failure_sign(std::string_view text);

// kolo's last line before it ends the job (runtime/watchdog.h).
struct KoloFatal {
  int rank = 0;                // the rank that printed it
  std::string why;             // what failed
  std::vector<int> silent;     // the ranks that did not answer its roll call
  std::optional<int> exit_code;  // what every process of the job exits with
  bool roll_called = false;    // whether the line says how a roll call went (one after
                               // MPI_Finalize began asks nobody)
};
std::optional<KoloFatal> parse_kolo_fatal(std::string_view text);

// The digits a pattern matched (a leading '-' allowed), as an int; nullopt when there are
// too many for one (the lines come from programs that may print anything).
std::optional<int> int_of_digits(const std::string& digits);

}  // namespace kolo::launcher
