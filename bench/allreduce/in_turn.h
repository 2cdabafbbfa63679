// Timing collective bodies in turn on every rank, for the allreduce benchmarks: each run
// starts together (a barrier) and counts as long as its slowest rank. And the round trip
// between two ranks, which says where a VM's host put their vCPUs.
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

// The round trip of one byte between ranks 0 and 1, in microseconds (median of 200): on a
// VM it tells where the host placed the vCPUs, which sets how fast every allreduce runs
// (at np 2 under plain mpirun on a 2-vCPU AMD EPYC VM it read 0.35 us while the two shared
// an L3 and 0.85-0.9 us while they did not, and the host moved them within seconds; MPI's
// yielding wait, as kolorun sets it, and more ranks than cores lengthen it too).
inline double round_trip_us() {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) return 0;
  std::vector<double> times;
  char byte = 0;
  for (int i = 0; i < 200; ++i) {
    const double start = MPI_Wtime();
    if (rank == 0) {
      MPI_Send(&byte, 1, MPI_CHAR, 1, 9, MPI_COMM_WORLD);
      MPI_Recv(&byte, 1, MPI_CHAR, 1, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      MPI_Recv(&byte, 1, MPI_CHAR, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(&byte, 1, MPI_CHAR, 0, 9, MPI_COMM_WORLD);
    }
    times.push_back((MPI_Wtime() - start) * 1e6);
  }
  return median(times);
}

}  // namespace kolo_bench
