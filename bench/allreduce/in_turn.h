// Timing collective bodies in turn on every rank, for the allreduce benchmarks: each run
// starts together (a barrier) and counts as long as its slowest rank.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <functional>
#include <vector>

namespace kolo_bench {

struct Timing {
  double min_ms = 0, median_ms = 0;
};

inline Timing summary(std::vector<double> times) {
  std::sort(times.begin(), times.end());
  return {times.front(), times[times.size() / 2]};
}

// The middle of `values` (the mean of the two middle ones for an even count).
inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// Runs the `bodies` in turn, `reps` times after `warmup` untimed rounds, alternating their
// order every round (A B, B A, ...) so that neither always runs first. `untimed` runs
// before each. Every rank starts each run together and the time of a run is the slowest
// rank's. One list of times per body, in milliseconds.
inline std::vector<std::vector<double>> measure_times(int warmup, int reps, const std::vector<std::function<void()>>& bodies,
                                                      const std::function<void()>& untimed = [] {}) {
  std::vector<std::vector<double>> times(bodies.size());
  for (int i = 0; i < warmup + reps; ++i) {
    for (std::size_t k = 0; k < bodies.size(); ++k) {
      const std::size_t b = (i % 2 == 0) ? k : bodies.size() - 1 - k;
      untimed();
      MPI_Barrier(MPI_COMM_WORLD);
      const double start = MPI_Wtime();
      bodies[b]();
      double elapsed = MPI_Wtime() - start;
      MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (i >= warmup) times[b].push_back(elapsed * 1e3);
    }
  }
  return times;
}

inline Timing measure(int warmup, int reps, const std::function<void()>& body,
                      const std::function<void()>& untimed = [] {}) {
  return summary(measure_times(warmup, reps, {body}, untimed)[0]);
}

}  // namespace kolo_bench
