// Runs mpirun/srun and watches it until it ends: its output through the parser into
// JobOutput, Ctrl-C/SIGTERM forwarded to it, --start-timeout enforced, and a bound on
// how long a stopping job may take before everything is SIGKILLed.
#pragma once

#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include "environment.h"
#include "job_output.h"
#include "output_parser.h"

namespace kolo::launcher {

struct SupervisorSettings {
  double start_timeout_seconds = 30;  // every rank's start report within this; 0: no bound
  double kill_grace_seconds = 10;     // after the stop signal, before SIGKILL
  // What a Ctrl-C becomes for the launcher. mpirun stops its job on SIGINT; srun only
  // prints its status on the first SIGINT, so it gets SIGTERM.
  int interrupt_signal = SIGINT;
  std::string launcher_name = "mpirun";
};

struct JobEnd {
  enum class Reason { LauncherExited, Interrupted, StartTimeout };
  Reason reason = Reason::LauncherExited;
  int launcher_exit_code = 0;   // 128 + signal when the launcher was killed
  int received_signal = 0;      // Interrupted: what kolorun got
  bool killed = false;          // the launcher had to be SIGKILLed
  double seconds_to_start = -1; // from the launch to the last rank's start report
};

// `argv[0]` is looked up on PATH. `make_parser` gives one parser per pipe.
JobEnd supervise(const std::vector<std::string>& argv, const Environment& env,
                 std::unique_ptr<OutputParser> (*make_parser)(), JobOutput& output,
                 const SupervisorSettings& settings);

}  // namespace kolo::launcher
