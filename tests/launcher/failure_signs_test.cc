// The lines that tell kolorun a rank has failed, as Open MPI 4.1.4, Slurm 22.05 and kolo's
// watchdog printed them in the fault tests (tests/faults), and lines that must not.
#include <catch2/catch.hpp>

#include "exit_report.h"
#include "failure_signs.h"

using namespace kolo::launcher;

TEST_CASE("kolo's last line is a failure sign, and names who printed it and who did not answer", "[failure-signs]") {
  const std::string line =
      "[kolo 0] FATAL: kolo: allreduce of 'loop' made no progress for 5 s (KOLO_DATA_TIMEOUT_SECONDS): a rank has "
      "died, hung, or lost its network link; rank 2 did not answer a roll call within 2 s; ending the job (exit code "
      "70)";
  CHECK(failure_sign(line) == FailureSign::KoloFatal);
  const std::optional<KoloFatal> fatal = parse_kolo_fatal(line);
  REQUIRE(fatal);
  CHECK(fatal->rank == 0);
  CHECK(fatal->why ==
        "kolo: allreduce of 'loop' made no progress for 5 s (KOLO_DATA_TIMEOUT_SECONDS): a rank has died, hung, or "
        "lost its network link");
  CHECK(fatal->silent == std::vector<int>{2});
  CHECK(fatal->exit_code == 70);

  const auto several = parse_kolo_fatal(
      "[kolo 2] FATAL: no answer from the other ranks for 5 s during negotiation (allreduce of ready bits): a rank "
      "has died, hung, or lost its network link (the program ended after the error); ranks 0, 1 did not answer a "
      "roll call within 2 s; ending the job (exit code 70)");
  REQUIRE(several);
  CHECK(several->rank == 2);
  CHECK(several->silent == std::vector<int>{0, 1});
  CHECK_THAT(several->why, Catch::Matchers::EndsWith("(the program ended after the error)"));

  const auto all_answered = parse_kolo_fatal(
      "[kolo 1] FATAL: kolo: stall shutdown; every rank answered a roll call; ending the job (exit code 70)");
  REQUIRE(all_answered);
  CHECK(all_answered->silent.empty());
  CHECK(all_answered->roll_called);
  CHECK(all_answered->why == "kolo: stall shutdown");
  CHECK(all_answered->exit_code == 70);

  const auto no_roll_call = parse_kolo_fatal(
      "[kolo 0] FATAL: kolo: MPI_Finalize waited 3 s (KOLO_CONTROL_TIMEOUT_SECONDS) for ranks that left kolo's "
      "shutdown round but never finalised MPI (hung after kolo::shutdown()?); ending the job (exit code 70)");
  REQUIRE(no_roll_call);
  CHECK_FALSE(no_roll_call->roll_called);
  CHECK(no_roll_call->exit_code == 70);
}

TEST_CASE("mpirun's reports of a failed rank and of an abort are failure signs", "[failure-signs]") {
  CHECK(failure_sign("mpirun noticed that process rank 2 with PID 0 on node vm exited on signal 9 (Killed).") ==
        FailureSign::RankFailed);
  CHECK(failure_sign("  Process name: [[3335,1],0]") == FailureSign::RankFailed);
  CHECK(failure_sign("MPI_ABORT was invoked on rank 1 in communicator MPI COMMUNICATOR 3 DUP FROM 0") ==
        FailureSign::Aborting);
  CHECK(failure_sign("ORTE has lost communication with a remote daemon.") == FailureSign::Aborting);
}

TEST_CASE("srun's reports of failed tasks and of an aborted step are failure signs", "[failure-signs][slurm]") {
  CHECK(failure_sign("srun: error: node1: task 2: Killed") == FailureSign::RankFailed);
  CHECK(failure_sign("srun: error: node0: tasks 0-1: Exited with exit code 70") == FailureSign::RankFailed);
  CHECK(failure_sign("srun: Job step aborted: Waiting up to 7 seconds for job step to finish.") ==
        FailureSign::Aborting);
}

TEST_CASE("ordinary output, kolo's other log lines and long lines are not failure signs", "[failure-signs]") {
  for (const char* line : {"rank 2 iter 300", "epoch 1/3 - 8 steps - loss 0.4100",
                           "[kolo 0] ERROR: no answer from the other ranks for 5 s during negotiation",
                           "[kolo 0] WARNING: stalled tensors", "srun: job 12 queued and waiting for resources",
                           "Primary job  terminated normally, but 1 process returned", ""}) {
    CAPTURE(line);
    CHECK(failure_sign(line) == FailureSign::None);
    CHECK_FALSE(parse_kolo_fatal(line));
  }
  // A rank's 64 KiB piece that happens to begin like kolo's line is not read as one.
  CHECK(failure_sign("[kolo 0] FATAL: x" + std::string(64 * 1024, 'x')) == FailureSign::None);
}

TEST_CASE("numbers too long for an int in a failure line are no rank, and do not throw", "[failure]") {
  CHECK_FALSE(parse_kolo_fatal("[kolo 99999999999] FATAL: x; ending the job (exit code 70)"));
  CHECK_FALSE(rank_failure_in_line("  Process name: [[1,1],99999999999]", nullptr));
  const std::string code = "  Exit code:    -1";
  const auto failure = rank_failure_in_line("  Process name: [[1,1],3]", &code);
  REQUIRE(failure);
  CHECK(failure->rank == 3);
  CHECK(failure->exit_code == -1);
  CHECK(int_of_digits("2147483648") == std::nullopt);
  CHECK(int_of_digits("-12") == -12);
}
