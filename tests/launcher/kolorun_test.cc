// kolorun run as a program, as a user runs it: it builds and runs mpirun itself.
#include <catch2/catch.hpp>

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <thread>
#include <vector>

#include "child_process.h"
#include "kolo/kolo.h"

using namespace kolo::launcher_test;
using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;
using Catch::Matchers::StartsWith;

namespace {

using namespace std::chrono_literals;
using Words = std::vector<std::string>;

Words kolorun(Words args) {
  args.insert(args.begin(), KOLORUN);
  return args;
}

std::string host_name() {
  char name[256] = {};
  ::gethostname(name, sizeof(name) - 1);
  return name;
}

std::filesystem::path fresh_directory(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::path(TEST_WORK_DIR) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// The pids after "pid=" in the ranks' output.
std::vector<pid_t> pids_in(const std::string& out) {
  std::vector<pid_t> pids;
  for (size_t at = out.find("pid="); at != std::string::npos; at = out.find("pid=", at + 1))
    pids.push_back(std::stoi(out.substr(at + 4)));
  return pids;
}

// Ranks orphaned by a killed mpirun are reaped by init a moment later.
bool all_gone(const std::vector<pid_t>& pids, std::chrono::milliseconds bound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (std::chrono::steady_clock::now() < deadline) {
    bool any = false;
    for (pid_t pid : pids) any = any || process_alive(pid);
    if (!any) return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

}  // namespace

// ---- the command it would run ------------------------------------------------------------

TEST_CASE("kolorun --dry-run prints the mpirun command, shell-quoted, and starts nothing", "[kolorun][dry-run]") {
  const Outcome r = run(kolorun({"-np", "2", "--dry-run", "--fusion-threshold-mb", "2", RANK_PROGRAM,
                                 "env", "two words"}),
                        test_environment({"KOLO_TEST_FORWARDED=1"}));
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  CHECK_THAT(r.out, Contains("mpirun "));
  CHECK_THAT(r.out, Contains(" --tag-output -np 2 -bind-to none -map-by slot --mca mpi_yield_when_idle 1 "));
  CHECK_THAT(r.out, Contains(" -x KOLO_TEST_FORWARDED "));
  CHECK_THAT(r.out, Contains(" -x KOLO_FUSION_THRESHOLD=2097152 "));
  CHECK_THAT(r.out, EndsWith(std::string(" ") + KOLORUN + " --rank-exec " + RANK_PROGRAM +
                             " env 'two words'\n"));
  if (::geteuid() == 0) {
    CHECK_THAT(r.out, StartsWith("env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun "
                                 "--allow-run-as-root --tag-output"));
  } else {
    CHECK_THAT(r.out, StartsWith("mpirun --tag-output"));
  }
}

TEST_CASE("kolorun --dry-run prints the command for hosts this machine cannot resolve, warning once for each",
          "[kolorun][dry-run][hosts]") {
  const Outcome r = run(kolorun({"-np", "3", "-H", "node-a.invalid:2,localhost,node-b.invalid", "--dry-run",
                                 RANK_PROGRAM, "env"}),
                        test_environment());
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Contains(" -np 3 -H node-a.invalid:2,localhost:1,node-b.invalid:1 "));
  CHECK_THAT(r.out, EndsWith(std::string(" --rank-exec ") + RANK_PROGRAM + " env\n"));
  const std::regex warning("kolorun: warning: host '([^']+)' does not resolve on this machine \\([^)]+\\)\n");
  std::vector<std::string> warned;
  for (auto it = std::sregex_iterator(r.err.begin(), r.err.end(), warning); it != std::sregex_iterator(); ++it)
    warned.push_back((*it)[1]);
  CHECK(warned == std::vector<std::string>{"node-a.invalid", "node-b.invalid"});
  // Nothing else on stderr: the warnings are the whole of it.
  CHECK(std::regex_replace(r.err, warning, "").empty());
}

TEST_CASE("kolorun --dry-run in a SLURM allocation prints srun with the variables in its environment",
          "[kolorun][dry-run][slurm]") {
  const std::string path = "PATH=" + std::string(FAKE_SLURM_DIR) + ":" + std::getenv("PATH");
  const Outcome r = run(kolorun({"-np", "3", "--dry-run", "--cycle-time-ms", "3", RANK_PROGRAM, "env"}),
                        test_environment({"SLURM_JOB_ID=77", path}));
  CHECK(r.exit_code == 0);
  CHECK(r.out == std::string("env KOLO_CYCLE_TIME=3 OMPI_MCA_mpi_yield_when_idle=1 srun --mpi=pmix -n 3 --label --export=ALL --kill-on-bad-exit=1 ") +
                     KOLORUN + " --rank-exec " + RANK_PROGRAM + " env\n");
}

TEST_CASE("kolorun --launcher mpirun in a SLURM allocation drops the node's vader directory",
          "[kolorun][dry-run][slurm]") {
  const Outcome r = run(kolorun({"-np", "2", "--dry-run", "--launcher", "mpirun", RANK_PROGRAM, "env"}),
                        test_environment({"SLURM_JOB_ID=77",
                                          "OMPI_MCA_btl_vader_backing_directory=/tmp/node0"}));
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, StartsWith("env -u OMPI_MCA_btl_vader_backing_directory"));
  CHECK_THAT(r.out, Contains(" mpirun "));
}

TEST_CASE("a SLURM allocation without srun on PATH is explained", "[kolorun][slurm][errors]") {
  const Outcome r = run(kolorun({"-np", "2", RANK_PROGRAM, "env"}),
                        test_environment({"SLURM_JOB_ID=77", "PATH=/nonexistent"}));
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("srun not found on PATH"));
  CHECK_THAT(r.err, Contains("--launcher mpirun"));
}

// ---- what the ranks get ------------------------------------------------------------------

TEST_CASE("every rank gets the flags' KOLO_ variables and the forwarded ones", "[kolorun][env]") {
  const Outcome r = run(kolorun({"-np", "2", "--fusion-threshold-mb", "2", "--cycle-time-ms", "0.5",
                                 "--cache-capacity", "7", "--hierarchical-allreduce", "--log-level",
                                 "DEBUG", "--timeline-filename", "/tmp/kolo-timeline.json",
                                 RANK_PROGRAM, "env"}),
                        test_environment({"KOLO_TEST_A=1", "HOROVOD_TEST_B=two", "NCCL_TEST_C=3",
                                          "KOLO_CACHE_CAPACITY=5"}));
  REQUIRE(r.exit_code == 0);
  for (int rank : {0, 1}) {
    const std::string prefix = "[" + std::to_string(rank) + "]<stdout>:rank " + std::to_string(rank) + ": ";
    for (const char* expected :
         {"KOLO_FUSION_THRESHOLD=2097152", "KOLO_CYCLE_TIME=0.5", "KOLO_CACHE_CAPACITY=7",
          "KOLO_HIERARCHICAL_ALLREDUCE=1", "KOLO_LOG_LEVEL=debug",
          "KOLO_TIMELINE=/tmp/kolo-timeline.json", "KOLO_TEST_A=1", "HOROVOD_TEST_B=two",
          "NCCL_TEST_C=3"})
      CHECK_THAT(r.out, Contains(prefix + expected + "\n"));
  }
  CHECK_THAT(r.out, !Contains("KOLO_CACHE_CAPACITY=5"));  // the flag wins
}

TEST_CASE("kolo's runtime reads the flags' settings in its own units", "[kolorun][env]") {
  const Outcome r = run(kolorun({"-np", "2", "--fusion-threshold-mb", "2", "--cycle-time-ms", "0.5",
                                 "--cache-capacity", "7", "--hierarchical-allgather", KOLO_SETTINGS_PROGRAM}),
                        test_environment());
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("[0]<stdout>:KOLO_FUSION_THRESHOLD = 2097152\n"));
  CHECK_THAT(r.out, Contains("[0]<stdout>:KOLO_CYCLE_TIME = 0.5\n"));
  CHECK_THAT(r.out, Contains("[0]<stdout>:KOLO_CACHE_CAPACITY = 7\n"));
  CHECK_THAT(r.out, Contains("[0]<stdout>:KOLO_HIERARCHICAL_ALLGATHER = 1\n"));
  CHECK_THAT(r.out, Contains("[0]<stdout>:KOLO_HIERARCHICAL_ALLREDUCE = 0\n"));
  CHECK(r.err.empty());  // every setting is one kolo acts on: no warning
}

TEST_CASE("the timeline-mark-cycles flag reaches the runtime, and a Horovod variable it ignores is named once by rank 0",
          "[kolorun][env]") {
  const std::string timeline = (fresh_directory("kolorun_mark_cycles") / "timeline.json").string();
  const Outcome r = run(kolorun({"-np", "2", "--timeline-filename", timeline, "--timeline-mark-cycles",
                                 KOLO_SETTINGS_PROGRAM}),
                        test_environment({"HOROVOD_THREAD_AFFINITY=1"}));
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("[0]<stdout>:KOLO_TIMELINE_MARK_CYCLES = 1\n"));
  CHECK(count_occurrences(r.err, "HOROVOD_THREAD_AFFINITY") == 1);
  CHECK_THAT(r.err, Contains("[0]<stderr>:[kolo 0] WARNING: HOROVOD_THREAD_AFFINITY=1 is ignored: "
                             "kolo does not pin its background thread to a core\n"));
  CHECK(std::filesystem::exists(timeline));
}

TEST_CASE("an MPI program runs on every rank with MPI wired up", "[kolorun][mpi]") {
  for (const Words& extra : {Words{}, Words{"--network-interface", "lo"}}) {
    Words args = {"-np", "3", "--oversubscribe"};  // more ranks than a small machine's cores
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back(MPI_PROGRAM);
    const Outcome r = run(kolorun(args), test_environment());
    INFO(r.err);
    CHECK(r.exit_code == 0);
    for (int rank : {0, 1, 2})
      CHECK_THAT(r.out, Contains("[" + std::to_string(rank) + "]<stdout>:rank " +
                                 std::to_string(rank) + " of 3: sum of ranks 3\n"));
  }
}

TEST_CASE("kolorun --output-filename keeps each rank's exact output in its own directory", "[kolorun][output]") {
  const std::filesystem::path dir = fresh_directory("rank-logs") / "logs";
  const Outcome r = run(kolorun({"-np", "2", "--output-filename", dir.string(), RANK_PROGRAM, "print"}),
                        test_environment());
  REQUIRE(r.exit_code == 0);
  CHECK(read_file(dir / "rank.0" / "stdout") == "rank 0 line\npartial");
  CHECK(read_file(dir / "rank.1" / "stdout") == "rank 1 line\npartial");
  CHECK(read_file(dir / "rank.0" / "stderr") == "rank 0 err\n");
  CHECK(read_file(dir / "rank.1" / "stderr") == "rank 1 err\n");
  CHECK_THAT(r.out, Contains("[1]<stdout>:rank 1 line\n"));
}

// ---- failures after the launch -----------------------------------------------------------

TEST_CASE("a rank exiting non-zero fails the job and kolorun names the rank, code and last lines",
          "[kolorun][failure]") {
  const Outcome r = run(kolorun({"-np", "2", RANK_PROGRAM, "exit", "1", "3"}), test_environment());
  CHECK(r.exit_code == 3);
  CHECK_THAT(r.err, Contains("kolorun: rank 1 (on " + host_name() + ") exited with code 3; its last lines:\n"));
  CHECK_THAT(r.err, Contains("  [1]<stdout>:rank 1: working\n"));
  CHECK_THAT(r.err, Contains("  [1]<stderr>:rank 1: about to exit with 3\n"));
}

TEST_CASE("a rank killed by a signal fails the job with 128 + signal", "[kolorun][failure]") {
  const Outcome r = run(kolorun({"-np", "2", RANK_PROGRAM, "kill", "1"}), test_environment());
  CHECK(r.exit_code == 128 + SIGKILL);
  CHECK_THAT(r.err, Contains("kolorun: rank 1 (on " + host_name() + ") was killed by signal 9"));
}

TEST_CASE("a rank that prints the launcher's failure messages itself is not taken for a failed job",
          "[kolorun][failure]") {
  // A test harness may echo a sub-job's log: only mpirun's own lines say a rank failed.
  for (const char* text : {"MPI_ABORT was invoked on rank 0 in communicator MPI_COMM_WORLD with errorcode 5",
                           "  Process name: [[1,1],99999999999]",
                           "mpirun noticed that process rank 0 with PID 0 on node vm exited on signal 9 (Killed)."}) {
    INFO(text);
    const Outcome r =
        run(kolorun({"-np", "1", "--kill-after-failure", "1", RANK_PROGRAM, "say", text, "3"}), test_environment());
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.err, !Contains("kolorun: rank"));
  }
}

TEST_CASE("kolorun --gloo does not wait for what a worker left running in the background", "[kolorun][gloo]") {
  const auto start = std::chrono::steady_clock::now();
  const Outcome r = run(kolorun({"--gloo", "-np", "1", "sh", "-c", "sleep 60 & echo started"}), test_environment());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("[0]<stdout>:started"));
  CHECK(seconds < 30);  // before: the sleep's 60 s, holding the worker's output pipe open
}

TEST_CASE("an elastic job does not wait for a discovery script still running when it ends", "[kolorun][gloo]") {
  // The first run answers at once; the later ones hang. The worker is done after a moment,
  // and the job with it: before, it waited for the hung run up to its 10 s bound.
  const std::filesystem::path dir = fresh_directory("slow-discovery");
  const std::string script = (dir / "discover.sh").string();
  {
    std::ofstream out(script);
    out << "#!/bin/sh\nif [ -e " << (dir / "once").string() << " ]; then sleep 60; fi\ntouch "
        << (dir / "once").string() << "\necho localhost:1\n";
  }
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  const auto start = std::chrono::steady_clock::now();
  const Outcome r = run(kolorun({"-np", "1", "--host-discovery-script", script, "sh", "-c", "sleep 3; echo done"}),
                        test_environment());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("[0]<stdout>:done"));
  CHECK(seconds < 9);
}

TEST_CASE("kolorun --gloo tells an exit code above 128 from a signal", "[kolorun][failure][gloo]") {
  // Exit codes of 160 and more once made kolorun look up a signal name that does not exist.
  for (const char* code : {"255", "200", "130"}) {
    INFO("exit code " << code);
    const Outcome r = run(kolorun({"--gloo", "-np", "2", RANK_PROGRAM, "exit", "1", code}), test_environment());
    CHECK(r.exit_code == std::atoi(code));
    CHECK_THAT(r.err, Contains("kolorun: rank 1 (on localhost) exited with code " + std::string(code)));
  }
  const Outcome r = run(kolorun({"--gloo", "-np", "2", RANK_PROGRAM, "kill", "1"}), test_environment());
  CHECK(r.exit_code == 128 + SIGKILL);
  CHECK_THAT(r.err, Contains("kolorun: rank 1 (on localhost) was killed by SIGKILL"));
}

TEST_CASE("SIGTERM, Ctrl-C and SIGHUP stop the job at once and leave no rank behind", "[kolorun][signals]") {
  for (int signal : {SIGTERM, SIGINT, SIGHUP}) {
    INFO("signal " << signal);
    ChildProcess job(kolorun({"-np", "2", RANK_PROGRAM, "sleep", "60"}), test_environment());
    REQUIRE(job.wait_for_output("pid=", 2, 60s));
    const std::vector<pid_t> ranks = pids_in(job.out());
    REQUIRE(ranks.size() == 2);
    const auto sent = std::chrono::steady_clock::now();
    ::kill(job.pid(), signal);
    const Outcome r = job.finish(30s);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
    INFO(r.err);
    CHECK(r.exit_code == 128 + signal);
    CHECK(seconds < 10);  // mpirun stopped its ranks; kolorun's 10 s SIGKILL bound was not needed
    CHECK_THAT(r.err, Contains("kolorun: job stopped"));
    CHECK(all_gone(ranks, 5s));
  }
}

TEST_CASE("when kolorun itself is killed the job ends too", "[kolorun][signals]") {
  ChildProcess job(kolorun({"-np", "2", RANK_PROGRAM, "sleep", "60"}), test_environment());
  REQUIRE(job.wait_for_output("pid=", 2, 60s));
  const std::vector<pid_t> ranks = pids_in(job.out());
  ::kill(job.pid(), SIGKILL);  // mpirun gets SIGTERM (PR_SET_PDEATHSIG) and stops the ranks
  CHECK(job.finish(10s).exit_code == 128 + SIGKILL);
  CHECK(all_gone(ranks, 10s));
}

TEST_CASE("kolorun --start-timeout stops a job whose ranks do not start, with exit 124",
          "[kolorun][start-timeout]") {
  const std::filesystem::path pid_file = fresh_directory("start-timeout") / "launcher.pid";
  const Outcome r = run(kolorun({"-np", "2", "--start-timeout", "1", RANK_PROGRAM, "env"}),
                        test_environment({std::string("KOLO_MPIRUN=") + SLOW_MPIRUN,
                                          "SLOW_MPIRUN_PID_FILE=" + pid_file.string()}));
  CHECK(r.exit_code == 124);
  CHECK(r.seconds < 10);
  CHECK_THAT(r.err, Contains("only 0 of 2 ranks started within --start-timeout 1 s (not started: 0, 1)"));
  CHECK_FALSE(process_alive(std::stoi(read_file(pid_file))));
}

TEST_CASE("a launcher deaf to SIGTERM is SIGKILLed after --kill-grace", "[kolorun][start-timeout]") {
  const std::filesystem::path pid_file = fresh_directory("kill-grace") / "launcher.pid";
  const Outcome r = run(kolorun({"-np", "2", "--start-timeout", "1", "--kill-grace", "1", RANK_PROGRAM, "env"}),
                        test_environment({std::string("KOLO_MPIRUN=") + SLOW_MPIRUN,
                                          "SLOW_MPIRUN_PID_FILE=" + pid_file.string(),
                                          "SLOW_MPIRUN_IGNORE_TERM=1"}));
  CHECK(r.exit_code == 124);
  CHECK(r.seconds < 10);
  CHECK_THAT(r.err, Contains("mpirun did not stop within 1 s: killing it"));
  CHECK_FALSE(process_alive(std::stoi(read_file(pid_file))));
}

// ---- the bound after a failure -----------------------------------------------------------

namespace {

// Each rank's pid from its "[R]<stdout>:pid=P" line.
std::map<int, pid_t> rank_pids(const std::string& out) {
  std::map<int, pid_t> pids;
  static const std::regex line(R"(\[(\d+)\]<stdout>:pid=(\d+))");
  for (auto it = std::sregex_iterator(out.begin(), out.end(), line); it != std::sregex_iterator(); ++it)
    pids[std::stoi((*it)[1])] = std::stoi((*it)[2]);
  return pids;
}

}  // namespace

TEST_CASE("ranks still running --kill-after-failure seconds after a rank failed are killed and named",
          "[kolorun][failure]") {
  // The stand-in mpirun ends nothing: kolorun's bound alone ends the job.
  for (const std::string mpirun_exits : {"", "70"}) {
    CAPTURE(mpirun_exits);
    const Outcome r = run(kolorun({"-np", "3", "--oversubscribe", "--kill-after-failure", "1", RANK_PROGRAM, "fatal", "0"}),
                          test_environment({std::string("KOLO_MPIRUN=") + STUCK_MPIRUN,
                                            "STUCK_MPIRUN_EXIT=" + mpirun_exits}),
                          60s);
    CHECK(r.exit_code == 70);
    CHECK(r.seconds < 8);
    const std::map<int, pid_t> pids = rank_pids(r.out);
    REQUIRE(pids.size() == 3);
    CHECK(all_gone({pids.at(0), pids.at(1), pids.at(2)}, 2s));
    for (int rank : {1, 2})
      CHECK_THAT(r.err, Contains("kolorun: rank " + std::to_string(rank) + " (host " + host_name() + ", pid " +
                                 std::to_string(pids.at(rank)) +
                                 ") was still running 1 s after a rank failed: killed it (SIGKILL)"));
    CHECK_THAT(r.err, !Contains("rank 0 (host"));  // it had exited
    if (mpirun_exits.empty()) CHECK_THAT(r.err, Contains("kolorun: mpirun still runs 1 s after a rank failed: killing it"));
    else CHECK_THAT(r.err, !Contains("mpirun still runs"));
    CHECK_THAT(r.err, Contains("kolorun: kolo on rank 0 (on " + host_name() +
                               ") ended the job: a test fault; every rank answered the roll call; its last lines:"));
  }
}

TEST_CASE("what a failed job left on another host is killed through the remote agent",
          "[kolorun][failure]") {
  // Rank 2 runs "on a host cut off from mpirun" (stuck_mpirun.sh): under a stand-in daemon
  // that killing mpirun does not end. The agent is fake_ssh.sh, which reaches it here.
  const std::regex killed_line(
      R"(kolorun: (rank 2|the parent of rank 2) \(host kolo-test-remote, pid (\d+), [^)]+\) was still running: )"
      R"(killed it \(SIGKILL, through fake_ssh.sh\))");
  // Stuck: kolorun kills mpirun at the bound, then asks the host. Exiting: mpirun says it
  // lost that host's daemon and exits; kolorun waits for the bound, then asks the host.
  for (const std::string mpirun_exits : {"", "70"}) {
    CAPTURE(mpirun_exits);
    const Outcome r = run(kolorun({"-np", "3", "--oversubscribe", "--kill-after-failure", "1", RANK_PROGRAM, "fatal", "0"}),
                          test_environment({std::string("KOLO_MPIRUN=") + STUCK_MPIRUN, "STUCK_MPIRUN_REMOTE_RANK=2",
                                            "STUCK_MPIRUN_EXIT=" + mpirun_exits,
                                            std::string("OMPI_MCA_plm_rsh_agent=") + FAKE_SSH}),
                          60s);
    CHECK(r.exit_code == 70);
    CHECK(r.seconds < 8);
    const std::map<int, pid_t> pids = rank_pids(r.out);
    REQUIRE(pids.size() == 3);
    std::map<std::string, pid_t> killed;
    for (auto it = std::sregex_iterator(r.err.begin(), r.err.end(), killed_line); it != std::sregex_iterator(); ++it)
      killed[(*it)[1]] = std::stoi((*it)[2]);
    CHECK(killed.size() == 2);
    CHECK(killed["rank 2"] == pids.at(2));
    CHECK(all_gone({pids.at(0), pids.at(1), pids.at(2), killed["the parent of rank 2"]}, 2s));
    CHECK_THAT(r.err, !Contains("cannot check or end the ranks on other hosts"));
  }
}

TEST_CASE("a host the remote agent cannot reach is named with the pids left there", "[kolorun][failure]") {
  const Outcome r = run(kolorun({"-np", "3", "--oversubscribe", "--kill-after-failure", "1", RANK_PROGRAM, "fatal", "0"}),
                        test_environment({std::string("KOLO_MPIRUN=") + STUCK_MPIRUN, "STUCK_MPIRUN_REMOTE_RANK=2",
                                          "OMPI_MCA_plm_rsh_agent=/bin/false"}),
                        60s);
  CHECK(r.exit_code == 70);
  const std::map<int, pid_t> pids = rank_pids(r.out);
  REQUIRE(pids.size() == 3);
  std::smatch m;
  const std::regex left(R"(kolorun: could not reach kolo-test-remote through false \(exit code 1\); left there, )"
                        R"(unless they have ended: the parent of rank 2 \(pid (\d+)\), rank 2 \(pid (\d+)\)\n)");
  REQUIRE(std::regex_search(r.err, m, left));
  CHECK(std::stoi(m[2]) == pids.at(2));
  // Left indeed: this test ends them itself.
  for (pid_t pid : {static_cast<pid_t>(std::stoi(m[1])), static_cast<pid_t>(std::stoi(m[2]))}) {
    CHECK(process_alive(pid));
    ::kill(pid, SIGKILL);
  }
}

// ---- errors before the launch ------------------------------------------------------------

TEST_CASE("errors found before the launch are explained and nothing starts", "[kolorun][errors]") {
  struct Case {
    Words args;
    int exit_code;
    std::string message;
  };
  const std::string not_executable = std::string(TEST_SOURCE_DIR) + "/kolorun_test.cc";
  const std::vector<Case> cases = {
      {{"-np", "2", "-H", "no-such-host.invalid:2", RANK_PROGRAM, "env"}, 1,
       "kolorun: unknown host 'no-such-host.invalid'"},
      {{"-np", "3", "-H", "localhost:2", RANK_PROGRAM, "env"}, 2,
       "kolorun: -np must be between 1 and 2 (the slots of -H localhost:2; --oversubscribe allows more), "
       "not 3\n"},
      {{"-np", "2", "no-such-program-kolo", "x"}, 1,
       "kolorun: program 'no-such-program-kolo' not found on PATH"},
      {{"-np", "2", not_executable}, 1, "kolorun: program '" + not_executable + "' is not executable"},
      {{"-np", "2", "--hostfile", "/nonexistent/hosts", RANK_PROGRAM}, 1, "cannot read '/nonexistent/hosts'"},
      {{"-np", "2", "--bogus", RANK_PROGRAM}, 2, "kolorun: unknown flag '--bogus'"},
      {{"-np", "0", "-H", "localhost:2", RANK_PROGRAM}, 2,
       "kolorun: -np must be between 1 and 2 (the slots of -H localhost:2; --oversubscribe allows more), "
       "not 0\n"},
      {{"-np", "two", RANK_PROGRAM}, 2, "kolorun: -np must be a whole number of ranks, 1 or more, not 'two'"},
      {{"-np", "2"}, 2, "no program given"},
  };
  for (const Case& c : cases) {
    INFO(c.message);
    const Outcome r = run(kolorun(c.args), test_environment());
    CHECK(r.exit_code == c.exit_code);
    CHECK_THAT(r.err, Contains(c.message));
    CHECK(r.out.empty());
  }
}

// Each must be refused before anything starts; --dry-run keeps the test from starting what
// kolorun would start if it accepted one.
TEST_CASE("kolorun refuses -np beyond this machine's cores, and empty or repeated hosts, with exit 2",
          "[kolorun][errors][hosts]") {
  const std::string local_range = "kolorun: -np must be between 1 and ";
  const std::vector<std::pair<Words, std::string>> cases = {
      {{"-np", "2147483647"}, local_range},
      {{"-np", "0"}, local_range},
      {{"-np", "2147483647", "--oversubscribe"}, local_range},
      {{"-np", "1", "-H", ""}, "kolorun: -H: no hosts given"},
      {{"-np", "1", "--hostfile", ""}, "kolorun: --hostfile must name a file of hosts, not ''"},
      {{"-np", "1", "-H", "localhost:2,,node1"},
       "kolorun: -H: entry 2 of 'localhost:2,,node1' is empty: expected host or host:slots\n"},
      {{"-np", "1", "-H", "localhost:0"}, "kolorun: -H: bad slot count '0' in 'localhost:0'"},
      {{"-np", "1", "-H", "localhost:2,localhost:2"},
       "kolorun: -H: host 'localhost' is listed twice (2 + 2 slots): list each host once, with all its slots\n"},
  };
  for (const auto& [flags, message] : cases) {
    Words args = flags;
    args.insert(args.end(), {"--dry-run", RANK_PROGRAM, "env"});
    INFO(message);
    const Outcome r = run(kolorun(args), test_environment());
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, StartsWith(message));
    CHECK(r.err.size() < 300);  // one line of words, no number printed in full
    CHECK(r.out.empty());
  }
}

TEST_CASE("kolorun --oversubscribe lets more ranks than slots run, and says so to mpirun",
          "[kolorun][dry-run][hosts]") {
  const Outcome r = run(kolorun({"-np", "3", "-H", "localhost:2", "--oversubscribe", "--dry-run", RANK_PROGRAM}),
                        test_environment());
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Contains(" -np 3 -H localhost:2 -bind-to none -map-by slot --oversubscribe "));
}

TEST_CASE("kolorun --help prints the usage", "[kolorun]") {
  const Outcome r = run(kolorun({"--help"}), test_environment());
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("Usage: kolorun -np N"));
  CHECK_THAT(r.out, Contains("--fusion-threshold-mb"));
}

// ---- the build ---------------------------------------------------------------------------

TEST_CASE("kolorun --check-build names the MPI library in use and this build's GPU facts", "[kolorun][check-build]") {
  // The reference: the version mpiexec reports, e.g. "mpiexec (OpenRTE) 4.1.4".
  const Outcome mpiexec = run({MPIEXEC, "--version"}, test_environment());
  const size_t at = mpiexec.out.find(") ");
  REQUIRE(at != std::string::npos);
  const std::string version = mpiexec.out.substr(at + 2, mpiexec.out.find('\n', at) - at - 2);
  REQUIRE_THAT(version, Catch::Matchers::Matches("[0-9]+\\.[0-9]+\\.[0-9]+"));

  const Outcome r = run(kolorun({"--check-build"}), test_environment());
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("[X] Open MPI v" + version));
  CHECK_THAT(r.out, Contains("MPI standard 3.1"));
  if (KOLO_TEST_WITH_CUDA) {
    CHECK_THAT(r.out, Contains("KOLO_WITH_CUDA=ON"));
    // CMake's CUDA toolkit version, to its major.minor, as the library was compiled with it.
    CHECK_THAT(r.out, Contains(std::string("[X] CUDA ") + KOLO_TEST_CUDA_VERSION + "\n        runtime "));
  } else {
    CHECK_THAT(r.out, Contains("KOLO_WITH_CUDA=OFF"));
    CHECK_THAT(r.out, Contains("[ ] CUDA"));
    CHECK_THAT(r.out, Contains("[ ] NCCL"));
    CHECK_THAT(r.out, Contains("[ ] cuDNN"));
  }
}

TEST_CASE("kolorun --check-build prints the library's own build_info()", "[kolorun][check-build]") {
  const kolo::BuildInfo info = kolo::build_info();
  const Outcome r = run(kolorun({"--check-build"}), test_environment());
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, StartsWith("kolo v" + info.version + " ("));
  CHECK_THAT(r.out, Contains("[X] " + info.mpi_library + "\n        MPI standard " + info.mpi_standard + "\n"));
  CHECK_THAT(r.out, Contains(std::string("KOLO_WITH_CUDA=") + (info.cuda ? "ON" : "OFF")));
  CHECK_THAT(r.out, Contains(std::string(info.nccl ? "[X]" : "[ ]") + " NCCL (KOLO_WITH_NCCL)"));
  if (info.cuda)
    CHECK_THAT(r.out, Contains("        runtime " + info.cuda_runtime + ", driver " + info.cuda_driver + ", " +
                               std::to_string(info.cuda_devices) + " device(s)\n"));
  if (info.nccl) CHECK_THAT(r.out, Contains("[X] NCCL " + info.nccl_compiled + "\n        runtime " + info.nccl_runtime));
}
