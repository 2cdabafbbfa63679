// The processes of a job that kolorun starts itself (kolorun --gloo, elastic jobs): each
// worker in a process group of its own (spawn_launcher.h), its output echoed through
// JobOutput as "[label]<stdout>:line", its exit collected, and then whatever it left in its
// group killed. Only kolorun's own children are signalled, by their process groups.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "environment.h"
#include "job_output.h"
#include "process_exit.h"
#include "signal_pipe.h"
#include "spawn_launcher.h"

namespace kolo::launcher {

class WorkerPool {
 public:
  explicit WorkerPool(JobOutput& output) : output_(output) {}
  ~WorkerPool();  // SIGKILLs what still runs (kolorun is ending)

  // Starts `argv` with `env`; its output is labelled `label` (the rank it started as).
  // Returns the worker's index in this pool.
  size_t start(const std::vector<std::string>& argv, const Environment& env, int label);

  // Echoes output and collects exits for up to `wait`; returns the signals kolorun got
  // (SIGINT, SIGTERM, SIGHUP) in that time.
  std::vector<int> pump(std::chrono::milliseconds wait);

  size_t count() const { return workers_.size(); }
  int label(size_t worker) const { return workers_[worker].label; }
  pid_t pid(size_t worker) const { return workers_[worker].process.pid; }
  // How it ended; nullopt while it runs.
  const std::optional<ProcessExit>& ended(size_t worker) const { return workers_[worker].ended; }
  bool running(size_t worker) const { return !workers_[worker].ended; }
  bool any_running() const;
  // True once its exit is collected and all its output read.
  bool finished(size_t worker) const;

  void signal(size_t worker, int sig);
  void signal_all(int sig);

 private:
  struct Worker {
    SpawnedLauncher process;
    int label = 0;
    std::optional<ProcessExit> ended;
  };
  JobOutput& output_;
  SignalPipe signals_;
  std::vector<Worker> workers_;
};

}  // namespace kolo::launcher
