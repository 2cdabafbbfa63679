#include "child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace kolo::launcher_test {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<char*> c_strings(const std::vector<std::string>& words) {
  std::vector<char*> pointers;
  for (const std::string& word : words) pointers.push_back(const_cast<char*>(word.c_str()));
  pointers.push_back(nullptr);
  return pointers;
}

}  // namespace

ChildProcess::ChildProcess(const std::vector<std::string>& argv,
                           const std::vector<std::string>& env) {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)
    throw std::runtime_error("pipe failed");
  std::vector<char*> args = c_strings(argv), envp = c_strings(env);
  started_ = Clock::now();
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    ::execve(args[0], args.data(), envp.data());
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  out_fd_ = out[0];
  err_fd_ = err[0];
}

ChildProcess::~ChildProcess() {
  if (!reaped_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (out_fd_ >= 0) ::close(out_fd_);
  if (err_fd_ >= 0) ::close(err_fd_);
}

bool ChildProcess::pump(Clock::time_point deadline) {
  if (out_fd_ < 0 && err_fd_ < 0) return false;
  pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) return false;
  if (::poll(fds, 2, static_cast<int>(left.count())) <= 0) return true;
  int* fd_of[2] = {&out_fd_, &err_fd_};
  std::string* text_of[2] = {&outcome_.out, &outcome_.err};
  for (int i = 0; i < 2; ++i) {
    if (fds[i].revents == 0) continue;
    char buffer[65536];
    const ssize_t n = ::read(*fd_of[i], buffer, sizeof(buffer));
    if (n > 0) {
      text_of[i]->append(buffer, static_cast<size_t>(n));
    } else {
      ::close(*fd_of[i]);
      *fd_of[i] = -1;
    }
  }
  return true;
}

bool ChildProcess::wait_for_output(const std::string& text, int count,
                                   std::chrono::milliseconds bound) {
  const auto deadline = Clock::now() + bound;
  while (count_occurrences(outcome_.out, text) < static_cast<size_t>(count))
    if (!pump(deadline)) return false;
  return true;
}

Outcome ChildProcess::finish(std::chrono::milliseconds bound) {
  const auto deadline = Clock::now() + bound;
  while (pump(deadline)) {
  }
  int status = 0;
  while (::waitpid(pid_, &status, WNOHANG) == 0) {
    if (Clock::now() >= deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      reaped_ = true;
      outcome_.exit_code = -1;
      return outcome_;
    }
    ::usleep(10000);
  }
  reaped_ = true;
  outcome_.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  outcome_.seconds = std::chrono::duration<double>(Clock::now() - started_).count();
  return outcome_;
}

Outcome run(const std::vector<std::string>& argv, const std::vector<std::string>& env,
            std::chrono::milliseconds bound) {
  ChildProcess child(argv, env);
  return child.finish(bound);
}

std::vector<std::string> test_environment(const std::vector<std::string>& extra) {
  auto replaced = [&extra](const std::string& entry) {
    for (const std::string& e : extra)
      if (entry.substr(0, entry.find('=') + 1) == e.substr(0, e.find('=') + 1)) return true;
    return false;
  };
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    if (text.rfind("KOLO_MPIRUN=", 0) == 0 || text.rfind("SLURM_", 0) == 0 ||
        text.rfind("OMPI_MCA_rmaps_base_oversubscribe=", 0) == 0 || replaced(text))
      continue;
    env.push_back(text);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

bool process_alive(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return false;
  const size_t close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}

size_t count_occurrences(const std::string& text, const std::string& what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace kolo::launcher_test
