// Runs mpirun/srun and watches it until it ends: its output through the parser into
// JobOutput, Ctrl-C/SIGTERM forwarded to it, --start-timeout enforced, and a bound on
// how long a stopping job may take before everything is SIGKILLed.
//
// Once a rank has failed (a line of failure_signs.h, or the launcher's own non-zero
// exit), the job has --kill-after-failure seconds to end: then every rank on this host
// that still runs is killed by its pid (its start report, rank_exec.h) and named, and the
// launcher is stopped (failure_stop_signal). Until then kolorun waits, even after the
// launcher has exited, for this host's ranks to be gone.
//
// Under mpirun, whatever it may have left on other hosts is then ended through the
// remote agent (remote_kill.h): when kolorun had to SIGKILL mpirun, or when mpirun exited
// having lost a daemon (kolorun then waits for the bound first, as for its own ranks).
// An mpirun that exited on its own otherwise has ended its daemons and their ranks.
#pragma once

#include <csignal>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "environment.h"
#include "failure_signs.h"
#include "job_output.h"
#include "output_parser.h"

namespace kolo::launcher {

struct SupervisorSettings {
  double start_timeout_seconds = 30;  // every rank's start report within this; 0: no bound
  double kill_grace_seconds = 10;     // after the stop signal, before SIGKILL
  double kill_after_failure_seconds = 10;  // after a rank failed, before kolorun kills the rest
  // What a launcher still running then gets. An mpirun that is still running has its own
  // abort under way and is stuck in it (a daemon cut off): SIGTERM only makes it crash,
  // so it gets SIGKILL, and its daemons lose it and end their ranks. srun gets SIGTERM,
  // which cancels the step, and SIGKILL after --kill-grace.
  int failure_stop_signal = SIGKILL;
  // What a Ctrl-C becomes for the launcher. mpirun stops its job on SIGINT; srun only
  // prints its status on the first SIGINT, so it gets SIGTERM.
  int interrupt_signal = SIGINT;
  std::string launcher_name = "mpirun";
  // The agent that ends the job's processes on other hosts (remote_kill.h), and its bound;
  // empty: none (srun, whose steps Slurm ends).
  std::vector<std::string> remote_agent;
  double remote_kill_seconds = 5;
};

struct JobEnd {
  enum class Reason { LauncherExited, Interrupted, StartTimeout };
  Reason reason = Reason::LauncherExited;
  int launcher_exit_code = 0;   // 128 + signal when the launcher was killed
  int received_signal = 0;      // Interrupted: what kolorun got
  bool killed = false;          // the launcher had to be SIGKILLed
  double seconds_to_start = -1; // from the launch to the last rank's start report
  bool failed = false;          // a failure sign was seen, or the launcher exited non-zero
  // The first "[kolo R] FATAL: ..." line of a rank, unless the launcher had named a rank
  // that failed before it.
  std::optional<KoloFatal> kolo_fatal;
};

// `argv[0]` is looked up on PATH. `make_parser` gives one parser per pipe.
JobEnd supervise(const std::vector<std::string>& argv, const Environment& env,
                 std::unique_ptr<OutputParser> (*make_parser)(), JobOutput& output,
                 const SupervisorSettings& settings);

}  // namespace kolo::launcher
