// How a child process of kolorun ended: the code a shell reports for it (128 + the signal
// when one killed it), and that signal. An exit code of 200 and a kill by signal 72 give the
// same code; only the wait status tells them apart, so it is kept.
#pragma once

#include <string>

namespace kolo::launcher {

struct ProcessExit {
  int code = 0;    // what kolorun exits with when this process decides its exit
  int signal = 0;  // the signal that killed it; 0: it exited with `code`

  static ProcessExit of_wait_status(int status);  // from waitpid()
  // "exited with code 3", "was killed by SIGKILL" ("by signal 40" for a real-time signal).
  std::string describe() const;
};

}  // namespace kolo::launcher
