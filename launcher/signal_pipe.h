// SIGINT, SIGTERM, SIGHUP and SIGCHLD as bytes on a pipe (the self-pipe trick), so that
// the supervisor's poll() loop wakes for them as it does for the job's output.
#pragma once

#include <csignal>
#include <vector>

namespace kolo::launcher {

class SignalPipe {
 public:
  SignalPipe();   // installs the handlers; one instance at a time
  ~SignalPipe();  // restores the previous handlers
  SignalPipe(const SignalPipe&) = delete;
  SignalPipe& operator=(const SignalPipe&) = delete;

  int fd() const { return read_fd_; }
  std::vector<int> take();  // the signals received since the last call, in order

  static constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGCHLD};

 private:
  int read_fd_ = -1;
  int write_fd_ = -1;
  struct sigaction previous_[4] = {};
};

}  // namespace kolo::launcher
