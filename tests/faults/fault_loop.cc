// The job the fault tests break (fault_test.py). Every rank says who and where it is (as soon
// as MPI knows: fault_pmpi.cc), then allreduces a vector in a loop, checks each result, and
// reports its progress about twice a second, until --seconds have passed (or --iterations
// are done).
//
//   rank R pid P host H        once, from inside kolo::init()
//   rank R iter I              progress
//   rank R done after I iterations
//
// Options put the fault at a point of kolo's life (rank 2 is the victim, kept out of the
// process sets made here):
//   --process-sets        each iteration also adds the set {0, 1} (KOLO_DYNAMIC_PROCESS_SETS=1),
//                         allreduces on it and removes it
//   --static-sets         init() makes the set {0, 1}
//   --stop-in-split K     rank 2 stops itself inside its K-th MPI_Comm_split for a process
//                         set (1 with --static-sets: inside init())
//   --hang-after-shutdown rank 2 never shuts kolo down nor finalises MPI after the loop: it
//                         says "rank 2 hangs after the loop" and sleeps
//   --slow OP --mib M     instead of the loop, one healthy OP (allgather, alltoall,
//                         reducescatter) of M MiB per rank, timed and checked:
//                         "rank R OP of M MiB took T s: correct"
//
// A kolo error (a rank is gone) is printed and the program returns 1, as a training
// program that catches kolo::Error would: its exit is what ends the job then (watchdog.h).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "fault_pmpi.h"
#include "kolo/kolo.h"

namespace {

constexpr size_t kElements = 1 << 16;  // 256 KiB of floats: several pieces per allreduce
using Clock = std::chrono::steady_clock;

struct Options {
  double seconds = 120;
  long iterations = -1;  // -1: until --seconds
  bool process_sets = false, static_sets = false, hang_after_shutdown = false;
  std::string slow_op;
  double slow_mib = 0;
};

[[noreturn]] void usage() {
  std::fprintf(stderr,
               "usage: fault_loop [--seconds S | --iterations N] [--process-sets] [--static-sets]\n"
               "                  [--stop-in-split K] [--hang-after-shutdown] [--slow allgather|alltoall|"
               "reducescatter --mib M]\n");
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage();
      return argv[++i];
    };
    if (arg == "--seconds") options.seconds = std::atof(value());
    else if (arg == "--iterations") options.iterations = std::atol(value());
    else if (arg == "--process-sets") options.process_sets = true;
    else if (arg == "--static-sets") options.static_sets = true;
    else if (arg == "--stop-in-split") fault_pmpi::stop_in_split = std::atoi(value());
    else if (arg == "--hang-after-shutdown") options.hang_after_shutdown = true;
    else if (arg == "--slow") options.slow_op = value();
    else if (arg == "--mib") options.slow_mib = std::atof(value());
    else usage();
  }
  if (!options.slow_op.empty() && options.slow_mib <= 0) usage();
  return options;
}

void allreduce_checked(const std::string& name, std::vector<float>& values, int rank, int size,
                       const kolo::ProcessSet& set) {
  values.assign(kElements, static_cast<float>(rank));
  kolo::allreduce(name, kolo::view(values), {.op = kolo::ReduceOp::Sum, .process_set = set});
  const float expected = static_cast<float>(size * (size - 1) / 2);
  if (values.front() != expected || values.back() != expected) {
    std::fprintf(stderr, "rank %d: %s sum %g, expected %g\n", rank, name.c_str(), values.front(), expected);
    std::exit(3);
  }
}

// Every rank's part filled with a value that names its sender (and receiver): a wrong byte
// anywhere shows.
bool run_slow(const Options& options, int rank, int size) {
  const int64_t count = static_cast<int64_t>(options.slow_mib * (1 << 20) / sizeof(float)) / size * size;
  std::vector<float> input(count);
  std::vector<float> expected;
  kolo::Handle handle;
  const auto start = Clock::now();
  if (options.slow_op == "allgather") {
    input.assign(count, static_cast<float>(rank));
    for (int r = 0; r < size; ++r) expected.insert(expected.end(), count, static_cast<float>(r));
    handle = kolo::allgather_async("slow", kolo::view(input));
  } else if (options.slow_op == "alltoall") {
    for (int64_t i = 0; i < count; ++i) input[i] = static_cast<float>(rank * size + i / (count / size));
    for (int r = 0; r < size; ++r) expected.insert(expected.end(), count / size, static_cast<float>(r * size + rank));
    handle = kolo::alltoall_async("slow", kolo::view(input));
  } else if (options.slow_op == "reducescatter") {
    input.assign(count, static_cast<float>(rank + 1));
    expected.assign(count / size, static_cast<float>(size * (size + 1) / 2));
    handle = kolo::reducescatter_async("slow", kolo::view(input), kolo::ReduceOp::Sum);
  } else {
    usage();
  }
  handle.wait().throw_if_error();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const kolo::TensorView output = handle.output();
  const auto* got = static_cast<const float*>(output.data);
  bool correct = output.num_elements() == static_cast<int64_t>(expected.size());
  for (size_t i = 0; correct && i < expected.size(); ++i) correct = got[i] == expected[i];
  std::printf("rank %d %s of %g MiB took %.1f s: %s\n", rank, options.slow_op.c_str(), options.slow_mib, seconds,
              correct ? "correct" : "WRONG");
  std::fflush(stdout);
  return correct;
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  if (options.static_sets) kolo::init({{0, 1}});
  else kolo::init();
  const int rank = kolo::rank(), size = kolo::size();

  const auto end = Clock::now() + std::chrono::duration<double>(options.seconds);
  auto next_report = Clock::now();
  std::vector<float> values(kElements);
  long iter = 0;
  try {
    if (!options.slow_op.empty()) {
      const bool correct = run_slow(options, rank, size);
      kolo::shutdown();
      return correct ? 0 : 3;
    }
    for (; options.iterations >= 0 ? iter < options.iterations : Clock::now() < end; ++iter) {
      allreduce_checked("loop", values, rank, size, kolo::global_process_set);
      if (options.process_sets) {
        const kolo::ProcessSet set = kolo::add_process_set({0, 1});
        if (rank < 2) allreduce_checked("in set", values, rank, 2, set);
        kolo::remove_process_set(set);
      } else if (options.static_sets && rank < 2) {
        allreduce_checked("in set", values, rank, 2, kolo::ProcessSet(1));
      }
      if (Clock::now() >= next_report) {
        std::printf("rank %d iter %ld\n", rank, iter);
        std::fflush(stdout);
        next_report = Clock::now() + std::chrono::milliseconds(500);
      }
    }
  } catch (const kolo::Error& e) {
    std::fprintf(stderr, "rank %d: kolo error at iter %ld: %s\n", rank, iter, e.what());
    return 1;
  }
  std::printf("rank %d done after %ld iterations\n", rank, iter);
  std::fflush(stdout);
  if (options.hang_after_shutdown && rank == fault_pmpi::victim) {
    // kolo's shutdown round ends with the other ranks' (they ask for it); this rank then
    // never reaches MPI_Finalize, as a program stuck in its own teardown.
    std::printf("rank %d hangs after the loop\n", rank);
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::seconds(600));
    return 1;
  }
  kolo::shutdown();
  return 0;
}
