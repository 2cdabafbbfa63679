// kolo-sim-probe: times kolo's allreduce of one tensor at several sizes on this job's ranks,
// for `kolo-sim fit-link` (sim/calibrate.py runs it). Rank 0 prints "bytes,ranks,seconds"
// lines: the median of --reps timed allreduces after 3 untimed ones.
//
//   kolorun -np 2 build/sim/kolo-sim-probe [--reps 20] [--sizes 4096,65536,1048576,16777216]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "kolo/kolo.h"

int main(int argc, char** argv) {
  CLI::App app{"kolo-sim-probe: kolo's allreduce time by size, for kolo-sim fit-link"};
  int reps = 20;
  std::vector<int64_t> sizes = {4096, 65536, 1 << 20, 16 << 20};
  app.add_option("--reps", reps, "timed allreduces per size")->capture_default_str()->check(CLI::Range(1, 10000));
  app.add_option("--sizes", sizes, "message sizes in bytes (multiples of 4)")->delimiter(',')->check(CLI::Range(int64_t{4}, int64_t{1} << 31));
  CLI11_PARSE(app, argc, argv);

  kolo::init();
  const int rank = kolo::rank(), size = kolo::size();
  if (rank == 0) std::printf("bytes,ranks,seconds\n");
  for (int64_t bytes : sizes) {
    std::vector<float> buffer(static_cast<std::size_t>(bytes / 4), 1.0f);
    std::vector<double> times;
    for (int i = 0; i < reps + 3; ++i) {
      const auto start = std::chrono::steady_clock::now();
      kolo::allreduce("probe." + std::to_string(bytes), kolo::view(buffer), {kolo::ReduceOp::Sum});
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (i >= 3) times.push_back(seconds);
    }
    std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
    if (rank == 0) std::printf("%lld,%d,%.9g\n", static_cast<long long>(bytes), size, times[times.size() / 2]);
  }
  kolo::shutdown();
  return 0;
}
