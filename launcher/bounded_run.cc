#include "bounded_run.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace kolo::launcher {
namespace {

using Clock = std::chrono::steady_clock;

void read_into(int& fd, std::string& text) {
  char buffer[4096];
  const ssize_t n = ::read(fd, buffer, sizeof(buffer));
  if (n < 0 && errno == EINTR) return;
  if (n <= 0) {
    ::close(fd);
    fd = -1;
    return;
  }
  text.append(buffer, static_cast<size_t>(n));
}

void reap_if_exited(BoundedRun& run) {
  if (run.exited || run.process.pid < 0) return;
  int status = 0;
  if (::waitpid(run.process.pid, &status, WNOHANG) != run.process.pid) return;
  run.exited = true;
  run.ended = ProcessExit::of_wait_status(status);
}

}  // namespace

bool finished(const BoundedRun& run) {
  return run.process.pid < 0 || (run.exited && run.process.out_fd < 0 && run.process.err_fd < 0);
}

void watch(std::vector<BoundedRun>& runs, Clock::time_point deadline) {
  do {  // at least once: a deadline already past reads what is there without waiting
    std::vector<pollfd> fds;
    std::vector<std::pair<int*, std::string*>> targets;
    bool all_finished = true;
    for (BoundedRun& run : runs) {
      reap_if_exited(run);
      all_finished = all_finished && finished(run);
      for (auto [fd, text] : {std::pair{&run.process.out_fd, &run.out}, std::pair{&run.process.err_fd, &run.err}})
        if (*fd >= 0) {
          fds.push_back({*fd, POLLIN, 0});
          targets.emplace_back(fd, text);
        }
    }
    if (all_finished) return;
    // Wake at least every 50 ms: a program's exit is seen by waitpid, not on a descriptor.
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    ::poll(fds.data(), fds.size(), static_cast<int>(std::clamp<long long>(left, 0, 50)));
    for (size_t i = 0; i < fds.size(); ++i)
      if (fds[i].revents != 0) read_into(*targets[i].first, *targets[i].second);
  } while (Clock::now() < deadline);
}

void end_run(BoundedRun& run) {
  if (run.process.pid < 0) return;
  if (!run.exited) {
    ::killpg(run.process.pid, SIGKILL);
    ::waitpid(run.process.pid, nullptr, 0);
  }
  for (int* fd : {&run.process.out_fd, &run.process.err_fd})
    if (*fd >= 0) ::close(*fd), *fd = -1;
}

}  // namespace kolo::launcher
