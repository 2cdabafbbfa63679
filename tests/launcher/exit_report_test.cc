#include <catch2/catch.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <string>

#include "exit_report.h"
#include "process_exit.h"

using namespace kolo::launcher;
using Catch::Matchers::Contains;

namespace {

std::deque<std::string> lines_of(const std::string& text) {
  std::deque<std::string> lines;
  size_t start = 0;
  for (size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1)
    lines.push_back(text.substr(start, nl - start));
  return lines;
}

}  // namespace

TEST_CASE("Open MPI's report of a non-zero exit names the rank and the code", "[exit]") {
  // Open MPI 4.1.4's message when rank 1 of 2 exited with 3.
  const auto failure = find_rank_failure(lines_of(
      "--------------------------------------------------------------------------\n"
      "Primary job  terminated normally, but 1 process returned\n"
      "a non-zero exit code. Per user-direction, the job has been aborted.\n"
      "--------------------------------------------------------------------------\n"
      "mpirun detected that one or more processes exited with non-zero status, thus causing\n"
      "the job to be terminated. The first process to do so was:\n"
      "\n"
      "  Process name: [[9249,1],1]\n"
      "  Exit code:    3\n"));
  REQUIRE(failure);
  CHECK(failure->rank == 1);
  CHECK(*failure->exit_code == 3);
  CHECK_FALSE(failure->signal);
  CHECK(job_exit_code(failure, 3) == 3);
}

TEST_CASE("Open MPI's report of a killed rank names the rank, node and signal", "[exit]") {
  const auto failure = find_rank_failure(
      {"mpirun noticed that process rank 2 with PID 0 on node vm exited on signal 9 (Killed)."});
  REQUIRE(failure);
  CHECK(failure->rank == 2);
  CHECK(failure->host == "vm");
  CHECK(*failure->signal == 9);
  CHECK(job_exit_code(failure, 137) == 137);
}

TEST_CASE("srun's reports of failed tasks", "[exit][slurm]") {
  auto failure = find_rank_failure({"srun: error: node1: task 3: Exited with exit code 2"});
  REQUIRE(failure);
  CHECK(failure->rank == 3);
  CHECK(failure->host == "node1");
  CHECK(*failure->exit_code == 2);
  failure = find_rank_failure({"srun: Job step aborted", "srun: error: node0: tasks 0-1: Killed"});
  REQUIRE(failure);
  CHECK(failure->rank == 0);
  CHECK(*failure->signal == SIGKILL);
}

TEST_CASE("no rank named: the launcher's own code, never 0", "[exit]") {
  CHECK_FALSE(find_rank_failure({"some other message"}));
  CHECK(job_exit_code(std::nullopt, 213) == 213);
  CHECK(job_exit_code(std::nullopt, 0) == 1);
}

TEST_CASE("the failure report names the rank, its host, its code and its last lines", "[exit]") {
  std::FILE* sink = std::tmpfile();
  JobOutput output({2, "", false, sink, sink, 20});
  output.add(Stream::Stderr, {1, "kolorun-rank-started host=node7 pid=42 start=1", true});
  output.add(Stream::Stdout, {1, "epoch 1", true});
  output.add(Stream::Stderr, {1, "loss is NaN", true});
  const std::string report =
      describe_job_failure(RankFailure{1, "", 3, std::nullopt}, output, Launcher::Mpirun, 3);
  CHECK(report == "kolorun: rank 1 (on node7) exited with code 3; its last lines:\n"
                  "  [1]<stdout>:epoch 1\n"
                  "  [1]<stderr>:loss is NaN\n");
  CHECK_THAT(describe_job_failure(std::nullopt, output, Launcher::Srun, 5),
             Contains("srun exited with code 5"));
  std::fclose(sink);
}

TEST_CASE("kolo's line is reported with the rank that did not answer and that rank's last lines", "[exit]") {
  std::FILE* sink = std::tmpfile();
  JobOutput output({3, "", false, sink, sink, 20});
  output.add(Stream::Stderr, {0, "kolorun-rank-started host=node0 pid=40 start=1", true});
  output.add(Stream::Stderr, {2, "kolorun-rank-started host=node1 pid=42 start=1", true});
  output.add(Stream::Stdout, {2, "rank 2 iter 7", true});
  const KoloFatal fatal{0, "kolo: allreduce of 'loop' made no progress for 5 s", {2}, 70, true};
  CHECK(describe_kolo_fatal(fatal, output) ==
        "kolorun: kolo on rank 0 (on node0) ended the job: kolo: allreduce of 'loop' made no progress for 5 s; "
        "rank 2 (on node1) did not answer the roll call; rank 2's last lines:\n"
        "  [2]<stdout>:rank 2 iter 7\n");
  CHECK(describe_kolo_fatal({0, "why", {1, 2}, 70, true}, output) ==
        "kolorun: kolo on rank 0 (on node0) ended the job: why; ranks 1, 2 (on node1) did not answer the roll "
        "call; rank 1 printed nothing\n");
  CHECK(describe_kolo_fatal({2, "why", {}, 70, true}, output) ==
        "kolorun: kolo on rank 2 (on node1) ended the job: why; every rank answered the roll call; its last lines:\n"
        "  [2]<stdout>:rank 2 iter 7\n");
  // A line that held no roll call (MPI_Finalize's bound) claims nothing about one.
  CHECK(describe_kolo_fatal({2, "why", {}, 70, false}, output) ==
        "kolorun: kolo on rank 2 (on node1) ended the job: why; its last lines:\n"
        "  [2]<stdout>:rank 2 iter 7\n");
  std::fclose(sink);
}

TEST_CASE("mpirun's lost daemon is reported with its host and the ranks that ran there", "[exit]") {
  // Open MPI 4.1.4 when the link to node1 was cut (tests/faults, kolo's timeouts above the keepalive).
  const std::deque<std::string> lines = lines_of(
      "--------------------------------------------------------------------------\n"
      "ORTE has lost communication with a remote daemon.\n"
      "\n"
      "  HNP daemon   : [[10520,0],0] on node node0\n"
      "  Remote daemon: [[10520,0],1] on node node1\n"
      "\n"
      "This is usually due to either a failure of the TCP network\n");
  REQUIRE(find_lost_host(lines) == "node1");
  CHECK_FALSE(find_lost_host(lines_of("  Remote daemon: [[10520,0],1] on node node1\n")));  // no loss reported
  std::FILE* sink = std::tmpfile();
  JobOutput output({3, "", false, sink, sink, 20});
  output.add(Stream::Stderr, {2, "kolorun-rank-started host=node1 pid=42 start=1", true});
  output.add(Stream::Stderr, {0, "kolorun-rank-started host=node0 pid=40 start=1", true});
  CHECK(describe_lost_host("node1", output, 205) ==
        "kolorun: mpirun lost its daemon on node1 (rank 2 ran there): that host or its network link failed; mpirun "
        "exited with code 205\n");
  std::fclose(sink);
}

TEST_CASE("a child's exit: a code, or the signal that killed it, named where it has a name", "[exit]") {
  CHECK(ProcessExit{3, 0}.describe() == "exited with code 3");
  CHECK(ProcessExit{200, 0}.describe() == "exited with code 200");  // not a signal 72
  CHECK(ProcessExit{128 + SIGKILL, SIGKILL}.describe() == "was killed by SIGKILL");
  CHECK(ProcessExit{128 + SIGRTMIN + 1, SIGRTMIN + 1}.describe() ==
        "was killed by signal " + std::to_string(SIGRTMIN + 1));
  int status = 0;
  const pid_t child = ::fork();
  if (child == 0) ::_exit(255);
  REQUIRE(::waitpid(child, &status, 0) == child);
  const ProcessExit ended = ProcessExit::of_wait_status(status);
  CHECK(ended.code == 255);
  CHECK(ended.signal == 0);
}
