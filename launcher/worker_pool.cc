#include "worker_pool.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>

namespace kolo::launcher {
namespace {

// Splits a chunk of a worker's output into JobOutput's pieces: whole lines, then what is
// left of an unfinished one.
void add_output(JobOutput& output, Stream stream, int label, std::string_view bytes) {
  for (;;) {
    const size_t newline = bytes.find('\n');
    if (newline == std::string_view::npos) break;
    output.add(stream, {label, std::string(bytes.substr(0, newline)), true});
    bytes.remove_prefix(newline + 1);
  }
  if (!bytes.empty()) output.add(stream, {label, std::string(bytes), false});
}

}  // namespace

WorkerPool::~WorkerPool() {
  signal_all(SIGKILL);
  for (Worker& w : workers_) {
    if (!w.ended) ::waitpid(w.process.pid, nullptr, 0);
    for (int fd : {w.process.out_fd, w.process.err_fd})
      if (fd >= 0) ::close(fd);
  }
}

size_t WorkerPool::start(const std::vector<std::string>& argv, const Environment& env, int label) {
  workers_.push_back({spawn_launcher(argv, env), label, std::nullopt});
  return workers_.size() - 1;
}

bool WorkerPool::any_running() const {
  return std::any_of(workers_.begin(), workers_.end(), [](const Worker& w) { return !w.ended; });
}

bool WorkerPool::finished(size_t i) const {
  const Worker& w = workers_[i];
  return w.ended && w.process.out_fd < 0 && w.process.err_fd < 0;
}

void WorkerPool::signal(size_t i, int sig) {
  if (!workers_[i].ended) ::kill(-workers_[i].process.pid, sig);  // its own group: ours to end
}

void WorkerPool::signal_all(int sig) {
  for (size_t i = 0; i < workers_.size(); ++i) signal(i, sig);
}

std::vector<int> WorkerPool::pump(std::chrono::milliseconds wait) {
  std::vector<pollfd> polled{{signals_.fd(), POLLIN, 0}};
  std::vector<std::pair<size_t, Stream>> owner;
  for (size_t i = 0; i < workers_.size(); ++i) {
    for (auto [fd, stream] : {std::pair{workers_[i].process.out_fd, Stream::Stdout},
                              std::pair{workers_[i].process.err_fd, Stream::Stderr}}) {
      if (fd < 0) continue;
      polled.push_back({fd, POLLIN, 0});
      owner.emplace_back(i, stream);
    }
  }
  ::poll(polled.data(), polled.size(), int(wait.count()));
  for (size_t p = 1; p < polled.size(); ++p) {
    if (!polled[p].revents) continue;
    auto [i, stream] = owner[p - 1];
    int& fd = stream == Stream::Stdout ? workers_[i].process.out_fd : workers_[i].process.err_fd;
    char buffer[65536];
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      add_output(output_, stream, workers_[i].label, std::string_view(buffer, size_t(n)));
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
      ::close(fd);
      fd = -1;
    }
  }
  output_.flush();
  for (Worker& w : workers_) {
    if (w.ended) continue;
    siginfo_t info = {};
    if (::waitid(P_PID, w.process.pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid != w.process.pid)
      continue;
    // What the worker leaves in its group (a program's background child) would keep its
    // output pipes open, and kolorun waiting, for as long as it runs: kill it now, while
    // the unreaped worker keeps the group id from reuse (as supervisor.cc does mpirun's).
    ::killpg(w.process.pid, SIGKILL);
    int status = 0;
    ::waitpid(w.process.pid, &status, 0);
    w.ended = ProcessExit::of_wait_status(status);
  }
  std::vector<int> got;
  for (int sig : signals_.take())
    if (sig != SIGCHLD) got.push_back(sig);
  return got;
}

}  // namespace kolo::launcher
