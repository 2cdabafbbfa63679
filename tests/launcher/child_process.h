// Runs a program (kolorun, in these tests) as a child with a given environment and
// captures its stdout and stderr, with a bound on every wait.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace kolo::launcher_test {

struct Outcome {
  int exit_code = -1;  // 128 + signal when killed
  std::string out;
  std::string err;
  double seconds = 0;  // from start to exit
};

class ChildProcess {
 public:
  ChildProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env);
  ~ChildProcess();  // kills the child if it is still running
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Reads until stdout holds `count` occurrences of `text`; false at the deadline.
  bool wait_for_output(const std::string& text, int count, std::chrono::milliseconds bound);
  // Reads to the end and reaps the child; a child still running at the deadline is
  // SIGKILLed and the outcome has exit_code -1.
  Outcome finish(std::chrono::milliseconds bound);
  const std::string& out() const { return outcome_.out; }

 private:
  bool pump(std::chrono::steady_clock::time_point deadline);  // false: nothing more to read

  pid_t pid_ = -1;
  int out_fd_ = -1, err_fd_ = -1;
  bool reaped_ = false;
  std::chrono::steady_clock::time_point started_;
  Outcome outcome_;
};

Outcome run(const std::vector<std::string>& argv, const std::vector<std::string>& env,
            std::chrono::milliseconds bound = std::chrono::seconds(120));

// This process's environment without the variables that would change kolorun's choices
// (KOLO_MPIRUN, SLURM_*, OMPI_MCA_rmaps_base_oversubscribe, which tools/common.sh exports),
// plus `extra` NAME=VALUE entries.
std::vector<std::string> test_environment(const std::vector<std::string>& extra = {});

// Whether `pid` is a live process (a zombie is not).
bool process_alive(pid_t pid);

size_t count_occurrences(const std::string& text, const std::string& what);

// A whole file's bytes ("" when it cannot be read).
std::string read_file(const std::string& path);

}  // namespace kolo::launcher_test
