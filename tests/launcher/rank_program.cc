// What the ranks run in the kolorun tests: a plain program (no MPI) that knows its rank
// from Open MPI's environment (or, under kolorun --gloo, Horovod's) and does one thing per
// mode:
//
//   rank_program env          print "rank R: NAME=VALUE" for every KOLO_/HOROVOD_/NCCL_ variable
//   rank_program exit R CODE  rank R says so on stderr and exits CODE; the others wait 3 s
//   rank_program kill R       rank R kills itself with SIGKILL; the others wait 3 s
//   rank_program sleep S      print "pid=<pid>", then sleep S seconds
//   rank_program print        "rank R line" and a partial line on stdout, "rank R err" on stderr
//   rank_program say TEXT S   print TEXT on stderr, then work on for S seconds and exit 0
//   rank_program fatal R      print "pid=<pid>"; rank R then prints a line as kolo's watchdog
//                             does before it ends a job and exits 70; the others ignore
//                             SIGTERM and sleep 60 s
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

extern char** environ;

namespace {

int my_rank() {
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (rank == nullptr) rank = std::getenv("HOROVOD_RANK");
  return rank ? std::atoi(rank) : -1;
}

int print_environment(int rank) {
  std::vector<std::string> lines;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    for (const char* prefix : {"KOLO_", "HOROVOD_", "NCCL_"})
      if (text.rfind(prefix, 0) == 0) lines.push_back(text);
  }
  std::sort(lines.begin(), lines.end());
  for (const std::string& line : lines) std::printf("rank %d: %s\n", rank, line.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const int rank = my_rank();
  if (mode == "env") return print_environment(rank);
  if ((mode == "exit" && argc == 4) || (mode == "kill" && argc == 3)) {
    if (rank != std::atoi(argv[2])) {
      ::sleep(3);
      return 0;
    }
    std::printf("rank %d: working\n", rank);
    std::fflush(stdout);
    if (mode == "kill") ::raise(SIGKILL);
    std::fprintf(stderr, "rank %d: about to exit with %s\n", rank, argv[3]);
    return std::atoi(argv[3]);
  }
  if (mode == "sleep" && argc == 3) {
    std::printf("pid=%d\n", static_cast<int>(::getpid()));
    std::fflush(stdout);
    ::sleep(static_cast<unsigned>(std::atoi(argv[2])));
    return 0;
  }
  if (mode == "fatal" && argc == 3) {
    std::printf("pid=%d\n", static_cast<int>(::getpid()));
    std::fflush(stdout);
    if (rank == std::atoi(argv[2])) {
      ::usleep(200 * 1000);  // after every rank's pid line
      std::fprintf(stderr, "[kolo %d] FATAL: a test fault; every rank answered a roll call; ending the job (exit code 70)\n",
                   rank);
      return 70;
    }
    ::signal(SIGTERM, SIG_IGN);
    ::sleep(60);
    return 0;
  }
  if (mode == "say" && argc == 4) {
    std::fprintf(stderr, "%s\n", argv[2]);
    ::sleep(static_cast<unsigned>(std::atoi(argv[3])));
    return 0;
  }
  if (mode == "print") {
    std::printf("rank %d line\npartial", rank);
    std::fflush(stdout);
    std::fprintf(stderr, "rank %d err\n", rank);
    return 0;
  }
  std::fprintf(stderr, "rank_program: unknown mode '%s'\n", mode.c_str());
  return 2;
}
