// The job the fault tests break (fault_test.py): every rank says who and where it is, then
// allreduces a vector in a loop, checks each result, and reports its progress about twice
// a second, until --seconds have passed.
//
//   rank R pid P host H        once, after kolo::init()
//   rank R iter I              progress
//   rank R done after I iterations
//
// A kolo error (a rank is gone) is printed and the program returns 1, as a training
// program that catches kolo::Error would: its exit is what ends the job then (watchdog.h).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kolo/kolo.h"

namespace {

constexpr size_t kElements = 1 << 16;  // 256 KiB of floats: several pieces per allreduce

std::string host_name() {
  char name[256] = {};
  ::gethostname(name, sizeof(name) - 1);
  return name;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 120;
  if (argc == 3 && std::string(argv[1]) == "--seconds") seconds = std::atof(argv[2]);
  else if (argc != 1) {
    std::fprintf(stderr, "usage: fault_loop [--seconds S]\n");
    return 2;
  }
  kolo::init();
  const int rank = kolo::rank(), size = kolo::size();
  std::printf("rank %d pid %ld host %s\n", rank, static_cast<long>(::getpid()), host_name().c_str());
  std::fflush(stdout);

  using Clock = std::chrono::steady_clock;
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  auto next_report = Clock::now();
  const float expected = static_cast<float>(size * (size - 1) / 2);
  std::vector<float> values(kElements);
  long iter = 0;
  try {
    for (; Clock::now() < end; ++iter) {
      values.assign(kElements, static_cast<float>(rank));
      kolo::allreduce("loop", kolo::view(values), {.op = kolo::ReduceOp::Sum});
      if (values.front() != expected || values.back() != expected) {
        std::fprintf(stderr, "rank %d iter %ld: sum %g, expected %g\n", rank, iter, values.front(), expected);
        return 3;
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
  kolo::shutdown();
  return 0;
}
