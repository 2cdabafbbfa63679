// Short programs kolorun runs to their end within a bound (the remote agents that end what
// a failed job left on other hosts, the host discovery script): their output collected, and
// a program still running at the bound killed with its process group.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "process_exit.h"
#include "spawn_launcher.h"

namespace kolo::launcher {

// One program under way: its output so far, and how it ended.
struct BoundedRun {
  std::string name;  // what the caller calls it (a host, a script)
  SpawnedLauncher process;
  std::string out, err;
  bool exited = false;
  ProcessExit ended;        // once exited
  std::string spawn_error;  // it could not be started (process.pid < 0)
};

// Reads every run's output until all have exited and closed their pipes, or the deadline
// (a deadline already past reads what is there and returns).
void watch(std::vector<BoundedRun>& runs, std::chrono::steady_clock::time_point deadline);
// Whether the run has exited and its output is all read (or it never started).
bool finished(const BoundedRun& run);
// After watch(): kills a run still going (its process group), reaps it, closes its pipes.
void end_run(BoundedRun& run);

}  // namespace kolo::launcher
