#include "signal_pipe.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "kolo/check.h"

namespace kolo::launcher {
namespace {

volatile int g_write_fd = -1;

void on_signal(int signal) {
  const int saved_errno = errno;
  const unsigned char byte = static_cast<unsigned char>(signal);
  [[maybe_unused]] ssize_t n = ::write(g_write_fd, &byte, 1);  // full pipe: dropped, harmless
  errno = saved_errno;
}

}  // namespace

SignalPipe::SignalPipe() {
  int fds[2];
  KOLO_CHECK(::pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0, StatusCode::IoError,
             std::string("kolorun: pipe: ") + std::strerror(errno));
  read_fd_ = fds[0];
  write_fd_ = fds[1];
  g_write_fd = write_fd_;
  struct sigaction action = {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  for (int i = 0; i < 4; ++i) sigaction(kSignals[i], &action, &previous_[i]);
}

SignalPipe::~SignalPipe() {
  for (int i = 0; i < 4; ++i) sigaction(kSignals[i], &previous_[i], nullptr);
  g_write_fd = -1;
  ::close(read_fd_);
  ::close(write_fd_);
}

std::vector<int> SignalPipe::take() {
  std::vector<int> signals;
  unsigned char bytes[64];
  ssize_t n;
  while ((n = ::read(read_fd_, bytes, sizeof(bytes))) > 0)
    signals.insert(signals.end(), bytes, bytes + n);
  return signals;
}

}  // namespace kolo::launcher
