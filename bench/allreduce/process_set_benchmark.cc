// What a steady training loop costs per step on a process set, against the same loop on
// the global set (docs/perf.md, "Process sets"). A step is the ResNet-50 gradient set's
// 161 tensors, each cut to `--elements` floats (default 16: the step is the negotiation
// cycle and little else), submitted in backprop order and waited for.
//
//   mpirun -np 3 process_set_benchmark    # set {0, 1} while rank 2 idles; then the global set
//   mpirun -np 2 process_set_benchmark    # the global set of the same two ranks
//
// With np >= 3 it prints the step time of the set of the first np - 1 ranks (rank np - 1
// idles in a barrier meanwhile, its runtimes cycling as a rank outside a busy set does),
// then of the global set of np ranks; with np 2, of the global set only. Compare the set's
// line of an np 3 run with the global line of an np 2 run: the same two ranks, the same
// loop, once through a set of a larger job and once as the whole job.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kolo/kolo.h"
#include "resnet50_gradients.h"

namespace {

// Median time of one step over `reps` steps (after `warmup`), the slowest rank's, in µs.
// Only the set's ranks call it; `comm` holds them.
double median_step_us(MPI_Comm comm, const kolo::ProcessSet& set, int warmup, int reps, int64_t elements) {
  const std::vector<GradientTensor> tensors = resnet50_gradients_backprop_order();
  std::vector<std::vector<float>> data(tensors.size(), std::vector<float>(static_cast<std::size_t>(elements), 1.0f));
  std::vector<kolo::Handle> handles(tensors.size());
  kolo::AllreduceOptions options;  // Average, as DistributedOptimizer sends
  options.process_set = set;
  std::vector<double> times;
  for (int i = 0; i < warmup + reps; ++i) {
    MPI_Barrier(comm);
    const double start = MPI_Wtime();
    for (std::size_t t = 0; t < tensors.size(); ++t)
      handles[t] = kolo::allreduce_async("grad/" + tensors[t].name, kolo::view(data[t]), options);
    for (const kolo::Handle& h : handles) h.wait().throw_if_error();
    double elapsed = MPI_Wtime() - start;
    MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX, comm);
    if (i >= warmup) times.push_back(elapsed * 1e6);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 300;
  int64_t elements = 16;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--elements") && i + 1 < argc) elements = std::atoll(argv[++i]);
    else {
      std::fprintf(stderr, "usage: process_set_benchmark [--reps N] [--elements N]\n");
      return 2;
    }
  }
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<int> first_ranks;
  for (int r = 0; r + 1 < size; ++r) first_ranks.push_back(r);
  const bool with_set = size >= 3;
  kolo::init(with_set ? std::vector<std::vector<int>>{first_ranks} : std::vector<std::vector<int>>{});
  if (with_set) {
    const kolo::ProcessSet set(1);
    MPI_Comm comm = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, set.included() ? 0 : MPI_UNDEFINED, rank, &comm);
    if (set.included()) {
      const double us = median_step_us(comm, set, 20, reps, elements);
      if (rank == 0)
        std::printf("process set of %d ranks (in a job of %d): %.1f us per step of 161 x %lld floats\n",
                    set.size(), size, us, static_cast<long long>(elements));
      MPI_Comm_free(&comm);
    }
    kolo::barrier();  // the last rank idles here while the set runs
  }
  const double us = median_step_us(MPI_COMM_WORLD, kolo::global_process_set, 20, reps, elements);
  if (rank == 0)
    std::printf("global set of %d ranks: %.1f us per step of 161 x %lld floats\n", size, us,
                static_cast<long long>(elements));
  kolo::shutdown();
  MPI_Finalize();
  return 0;
}
