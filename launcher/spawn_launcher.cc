#include "spawn_launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "kolo/check.h"
#include "preflight.h"

namespace kolo::launcher {
namespace {

std::vector<char*> c_strings(const std::vector<std::string>& words) {
  std::vector<char*> pointers;
  for (const std::string& word : words) pointers.push_back(const_cast<char*>(word.c_str()));
  pointers.push_back(nullptr);
  return pointers;
}

void make_pipe(int fds[2]) {
  KOLO_CHECK(::pipe2(fds, O_CLOEXEC) == 0, StatusCode::IoError,
             std::string("kolorun: pipe: ") + std::strerror(errno));
}

// Between fork and exec: only async-signal-safe calls (kolorun may have a resolver
// thread running), everything allocated beforehand.
[[noreturn]] void become_launcher(const char* path, char* const* argv, char* const* envp,
                                  pid_t kolorun, int out, int err, int exec_error, Terminal terminal) {
  // Its own process group: a Ctrl-C on the terminal reaches kolorun alone, which
  // forwards it, and SIGKILL can reach the launcher together with whatever helper it
  // starts in its group (a wrapper script and its children). Open MPI gives each rank a
  // group of its own, so ranks are stopped by mpirun, or in the last resort by pid.
  // A new session is a new process group as well.
  if (terminal == Terminal::Detached) ::setsid();
  else ::setpgid(0, 0);
  // If kolorun dies, even by SIGKILL, the launcher gets SIGTERM and stops the ranks.
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != kolorun) ::_exit(127);
  struct sigaction default_action = {};
  default_action.sa_handler = SIG_DFL;
  for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE})
    ::sigaction(signal, &default_action, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::dup2(out, STDOUT_FILENO);
  ::dup2(err, STDERR_FILENO);
  // A process group other than the terminal's foreground group is stopped (SIGTTIN) when
  // it reads the terminal, so the job reads kolorun's stdin only when it is not one.
  if (terminal == Terminal::Detached || ::isatty(STDIN_FILENO)) {
    const int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, STDIN_FILENO);
  }
  ::execve(path, argv, envp);
  const int error = errno;
  [[maybe_unused]] ssize_t n = ::write(exec_error, &error, sizeof(error));
  ::_exit(127);
}

}  // namespace

SpawnedLauncher spawn_launcher(const std::vector<std::string>& argv, const Environment& env,
                               Terminal terminal) {
  const std::string path = find_executable(argv.at(0), current_environment());
  if (path.empty())
    throw Error(StatusCode::InvalidArgument, "kolorun: cannot find '" + argv[0] + "' on PATH");
  std::vector<char*> args = c_strings(argv), envp = c_strings(env);
  int out[2], err[2], exec_error[2];
  make_pipe(out);
  make_pipe(err);
  make_pipe(exec_error);

  // No signal handler of kolorun's may run in the child before exec.
  sigset_t all, previous;
  sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, &previous);
  const pid_t kolorun = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0)
    become_launcher(path.c_str(), args.data(), envp.data(), kolorun, out[1], err[1], exec_error[1], terminal);
  const int fork_errno = errno;
  ::sigprocmask(SIG_SETMASK, &previous, nullptr);
  for (int fd : {out[1], err[1], exec_error[1]}) ::close(fd);
  if (pid < 0) {
    for (int fd : {out[0], err[0], exec_error[0]}) ::close(fd);
    throw Error(StatusCode::IoError, std::string("kolorun: fork: ") + std::strerror(fork_errno));
  }
  // Also here: kolorun may signal the group before the child runs. Not for a new session:
  // setsid() fails in a process that already leads a group, and the wait for the exec
  // below orders it before any signal.
  if (terminal == Terminal::Shared) ::setpgid(pid, pid);

  int error = 0;  // the exec error pipe closes on a successful exec
  ssize_t n;
  while ((n = ::read(exec_error[0], &error, sizeof(error))) < 0 && errno == EINTR) {
  }
  ::close(exec_error[0]);
  if (n == sizeof(error)) {
    ::close(out[0]);
    ::close(err[0]);
    throw Error(StatusCode::IoError, "kolorun: cannot run '" + path + "': " + std::strerror(error));
  }
  return {pid, out[0], err[0]};
}

}  // namespace kolo::launcher
