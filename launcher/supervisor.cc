#include "supervisor.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <string>

#include "exit_report.h"
#include "kolo/kolo.h"
#include "rank_exec.h"
#include "remote_kill.h"
#include "signal_pipe.h"
#include "spawn_launcher.h"

namespace kolo::launcher {
namespace {

using Clock = std::chrono::steady_clock;

// After the launcher exits, how long its output pipes may stay open (held by some
// process it left behind) before kolorun stops reading them.
constexpr std::chrono::seconds kDrainBound{2};

Clock::time_point after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(seconds));
}

class Watch {
 public:
  Watch(const SpawnedLauncher& launcher, SignalPipe& signals,
        std::unique_ptr<OutputParser> (*make_parser)(), JobOutput& output,
        const SupervisorSettings& settings)
      : pid_(launcher.pid), signals_(signals), output_(output), settings_(settings) {
    streams_[0] = {launcher.out_fd, make_parser(), Stream::Stdout};
    streams_[1] = {launcher.err_fd, make_parser(), Stream::Stderr};
    if (settings.start_timeout_seconds > 0) start_deadline_ = after(settings.start_timeout_seconds);
  }

  JobEnd run() {
    std::optional<Clock::time_point> drain_deadline;
    while (true) {
      poll_once();
      for (int signal : signals_.take())
        if (signal != SIGCHLD) on_stop_request(signal);
      reap();
      if (exited_ && !drain_deadline) drain_deadline = Clock::now() + kDrainBound;
      const bool drained = exited_ && (all_streams_closed() || Clock::now() >= *drain_deadline);
      if (drained && !waiting_after_failure()) break;
      check_deadlines();
    }
    for (auto& stream : streams_) close_stream(stream);
    output_.finish();
    return end_;
  }

 private:
  struct StreamState {
    int fd = -1;
    std::unique_ptr<OutputParser> parser;
    Stream stream = Stream::Stdout;
  };

  void poll_once() {
    pollfd fds[3] = {{signals_.fd(), POLLIN, 0}, {streams_[0].fd, POLLIN, 0},
                     {streams_[1].fd, POLLIN, 0}};
    ::poll(fds, 3, next_timeout_ms());
    for (int i = 0; i < 2; ++i)
      if (fds[i + 1].revents != 0) read_stream(streams_[i]);
  }

  int next_timeout_ms() const {
    // Wake at least once a second: the exit of the launcher is also checked by waitpid.
    auto next = Clock::now() + std::chrono::seconds(1);
    for (const auto& deadline : {start_deadline_, kill_deadline_, failure_deadline_})
      if (deadline && *deadline < next) next = *deadline;
    if (exited_) next = std::min(next, Clock::now() + std::chrono::milliseconds(50));
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now());
    return static_cast<int>(std::max<long long>(0, ms.count()));
  }

  void read_stream(StreamState& s) {
    char buffer[65536];
    const ssize_t n = ::read(s.fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) return;
    if (n <= 0) return close_stream(s);
    for (const OutputPiece& piece : s.parser->feed(std::string_view(buffer, n))) add(s.stream, piece);
    output_.flush();
  }

  void close_stream(StreamState& s) {
    if (s.fd < 0) return;
    for (const OutputPiece& piece : s.parser->finish()) add(s.stream, piece);
    ::close(s.fd);
    s.fd = -1;  // poll() ignores negative descriptors
  }

  void add(Stream stream, const OutputPiece& piece) {
    const std::optional<OutputPiece> line = output_.add(stream, piece);
    if (!line) return;  // a partial line: its failure sign, if any, is read once it is whole
    const FailureSign sign = failure_sign(line->text);
    if (sign == FailureSign::None || !believed(sign, line->rank)) return;
    // kolo's line is the job's story unless the launcher had already named a rank that
    // died: the ranks kolo found silent are then that rank's consequence.
    if (sign == FailureSign::KoloFatal && !end_.kolo_fatal && !rank_named_)
      end_.kolo_fatal = parse_kolo_fatal(line->text);
    if (sign == FailureSign::RankFailed) rank_named_ = true;
    on_failure();
  }

  // A rank's program may print anything, an Open MPI message included (a test harness
  // echoing a sub-job's log): a rank's line counts only where the sign really comes from a
  // rank, kolo's own line, and MPI_ABORT's notice under srun (mpirun prints it itself).
  bool believed(FailureSign sign, int rank) const {
    if (rank == kLauncherItself) return sign != FailureSign::KoloFatal;
    return sign == FailureSign::KoloFatal || (sign == FailureSign::Aborting && settings_.launcher_name == "srun");
  }

  // The first sign that a rank failed starts the bound on the rest of the job.
  void on_failure() {
    if (end_.failed) return;
    end_.failed = true;
    failure_deadline_ = after(settings_.kill_after_failure_seconds);
  }

  // After a failure, this host's ranks may still be ending when the launcher has already
  // exited (srun's step is torn down by slurmstepd); kolorun waits for them, to the bound.
  // So it does for another host whose daemon mpirun lost: only kolorun can end it then.
  bool waiting_after_failure() const {
    if (!failure_deadline_) return false;
    const std::string here = this_host_name();
    if (exited_ && remote_ends_needed_after_exit() && !remote_processes(output_.starts(), here).empty()) return true;
    for (const auto& [rank, start] : output_.starts())
      if (start.host == here && rank_still_running(start)) return true;
    return false;
  }

  bool all_streams_closed() const { return streams_[0].fd < 0 && streams_[1].fd < 0; }

  void reap() {
    if (exited_) return;
    siginfo_t info = {};
    if (::waitid(P_PID, pid_, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid != pid_)
      return;
    // Whatever the launcher leaves in its group (a wrapper's children, say) would be
    // orphaned: kill it now, while the unreaped launcher keeps the group id from reuse.
    ::killpg(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    exited_ = true;
    end_.launcher_exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    start_deadline_.reset();
    kill_deadline_.reset();
    if (end_.launcher_exit_code != 0 && end_.reason == JobEnd::Reason::LauncherExited) on_failure();
    // Killed, mpirun ended nothing on the other hosts; its daemons there end their ranks
    // when they lose it, unless they are cut off from it.
    if (end_.killed) end_remote_processes();
  }

  // mpirun exited on its own but said it lost a daemon: that host was never told to stop.
  bool remote_ends_needed_after_exit() const {
    return !settings_.remote_agent.empty() && find_lost_host(output_.launcher_lines()).has_value();
  }

  void end_remote_processes() {
    if (settings_.remote_agent.empty() || remote_ended_) return;
    remote_ended_ = true;
    const RemoteProcesses processes = remote_processes(output_.starts(), this_host_name());
    if (processes.empty()) return;
    output_.flush();
    const std::string agent = settings_.remote_agent[0].substr(settings_.remote_agent[0].rfind('/') + 1);
    for (const RemoteKillOutcome& outcome :
         kill_remote_processes(settings_.remote_agent, processes, settings_.remote_kill_seconds))
      std::fputs(describe_remote_kill(outcome, processes.at(outcome.host), agent).c_str(), stderr);
  }

  void on_stop_request(int signal) {
    if (exited_) return;
    if (stopping_) {  // a second Ctrl-C: no more waiting
      std::fprintf(stderr, "kolorun: signal %d again: killing the job now\n", signal);
      return kill_everything();
    }
    end_.reason = JobEnd::Reason::Interrupted;
    end_.received_signal = signal;
    // A hang-up, like SIGTERM, asks the job to end: mpirun and srun both take SIGTERM.
    stop(signal == SIGINT ? settings_.interrupt_signal : SIGTERM,
         std::string("got SIG") + sigabbrev_np(signal));
  }

  void check_deadlines() {
    const auto now = Clock::now();
    if (end_.seconds_to_start < 0 && output_.ranks_not_started().empty()) {
      end_.seconds_to_start = std::chrono::duration<double>(now - launched_).count();
      start_deadline_.reset();  // every rank is running
    }
    if (failure_deadline_ && now >= *failure_deadline_) end_failed_job();
    if (exited_) return;
    if (start_deadline_ && now >= *start_deadline_ && !stopping_) {
      start_deadline_.reset();
      end_.reason = JobEnd::Reason::StartTimeout;
      stop(SIGTERM, "not every rank started within the start timeout");
    }
    if (kill_deadline_ && now >= *kill_deadline_) {
      std::fprintf(stderr, "kolorun: %s did not stop within %g s: killing it\n",
                   settings_.launcher_name.c_str(), settings_.kill_grace_seconds);
      kill_everything();
    }
  }

  // The bound after a failure has passed: kill what still runs here, name it, and stop the
  // launcher; what it leaves on other hosts goes through the remote agent, or is named as
  // the launcher's to end when there is none.
  void end_failed_job() {
    failure_deadline_.reset();
    const std::string here = this_host_name();
    std::string remote;
    for (const auto& [rank, start] : output_.starts()) {
      if (start.host != here) {
        remote += (remote.empty() ? "" : ", ") + describe_rank(rank, start);
      } else if (rank_still_running(start)) {
        ::kill(static_cast<pid_t>(start.pid), SIGKILL);
        std::fprintf(stderr, "kolorun: %s was still running %g s after a rank failed: killed it (SIGKILL)\n",
                     describe_rank(rank, start).c_str(), settings_.kill_after_failure_seconds);
      }
    }
    if (exited_ && remote_ends_needed_after_exit()) end_remote_processes();
    if (exited_ || stopping_) return;
    if (!remote.empty() && settings_.remote_agent.empty())
      std::fprintf(stderr,
                   "kolorun: cannot check or end the ranks on other hosts: %s; %s's daemons end them, unless "
                   "their host is cut off (kolo then ends them itself)\n",
                   remote.c_str(), settings_.launcher_name.c_str());
    const std::string why = settings_.launcher_name + " still runs " +
                            seconds_text(settings_.kill_after_failure_seconds) + " after a rank failed";
    if (settings_.failure_stop_signal != SIGKILL) return stop(settings_.failure_stop_signal, why);
    std::fprintf(stderr, "kolorun: %s: killing it (SIGKILL to pid %d and its process group)\n", why.c_str(),
                 static_cast<int>(pid_));
    kill_everything();
  }

  static std::string describe_rank(int rank, const RankStart& start) {
    return "rank " + std::to_string(rank) + " (host " + start.host + ", pid " + std::to_string(start.pid) + ")";
  }

  static std::string seconds_text(double seconds) {
    char text[32];
    std::snprintf(text, sizeof(text), "%g s", seconds);
    return text;
  }

  void stop(int signal, const std::string& why) {
    stopping_ = true;
    start_deadline_.reset();
    std::fprintf(stderr, "kolorun: %s; sending SIG%s to %s (pid %d), SIGKILL after %g s\n",
                 why.c_str(), sigabbrev_np(signal), settings_.launcher_name.c_str(),
                 static_cast<int>(pid_), settings_.kill_grace_seconds);
    ::kill(pid_, signal);
    kill_deadline_ = after(settings_.kill_grace_seconds);
  }

  void kill_everything() {
    kill_deadline_.reset();
    end_.killed = true;
    ::killpg(pid_, SIGKILL);
    kill_local_ranks();
  }

  // Ranks on this host that reported their start, if still the same processes (the
  // start time tells a reused pid apart). Ranks on other hosts: end_remote_processes(),
  // once the launcher is reaped.
  void kill_local_ranks() {
    const std::string here = this_host_name();
    for (const auto& [rank, start] : output_.starts())
      if (start.host == here && rank_still_running(start)) ::kill(static_cast<pid_t>(start.pid), SIGKILL);
  }

  pid_t pid_;
  SignalPipe& signals_;
  JobOutput& output_;
  const SupervisorSettings& settings_;
  StreamState streams_[2];
  JobEnd end_;
  bool exited_ = false;
  bool stopping_ = false;
  bool rank_named_ = false;  // the launcher has named a failed rank
  bool remote_ended_ = false;  // the remote agents have run
  Clock::time_point launched_ = Clock::now();
  std::optional<Clock::time_point> start_deadline_;
  std::optional<Clock::time_point> kill_deadline_;
  std::optional<Clock::time_point> failure_deadline_;  // set from the first failure until acted on
};

}  // namespace

JobEnd supervise(const std::vector<std::string>& argv, const Environment& env,
                 std::unique_ptr<OutputParser> (*make_parser)(), JobOutput& output,
                 const SupervisorSettings& settings) {
  SignalPipe signals;  // before the launcher exists, so that no stop request is missed
  const SpawnedLauncher launcher = spawn_launcher(argv, env);
  return Watch(launcher, signals, make_parser, output, settings).run();
}

}  // namespace kolo::launcher
