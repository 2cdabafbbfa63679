#include "process_exit.h"

#include <sys/wait.h>

#include <cstring>

namespace kolo::launcher {

ProcessExit ProcessExit::of_wait_status(int status) {
  if (WIFEXITED(status)) return {WEXITSTATUS(status), 0};
  if (WIFSIGNALED(status)) return {128 + WTERMSIG(status), WTERMSIG(status)};
  return {1, 0};
}

std::string ProcessExit::describe() const {
  if (signal == 0) return "exited with code " + std::to_string(code);
  // sigabbrev_np has no name for real-time signals (null).
  if (const char* name = sigabbrev_np(signal)) return std::string("was killed by SIG") + name;
  return "was killed by signal " + std::to_string(signal);
}

}  // namespace kolo::launcher
