// Runs a few named collectives so that KOLO_TIMELINE (set by CTest) records them; the
// file is then checked by `kolo_runtime_unit_tests [timeline-file]`.
//
//   KOLO_TIMELINE=/tmp/t.json mpirun -np 2 kolo_timeline_writer
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <mpi.h>

#include "kolo/kolo.h"

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  const char* path = std::getenv("KOLO_TIMELINE");
  if (path == nullptr) {
    std::fprintf(stderr, "set KOLO_TIMELINE\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (world_rank == 0) std::remove(path);  // a stale file must not pass the check
  MPI_Barrier(MPI_COMM_WORLD);

  int failures = 0;
  try {
    kolo::init();
    const int size = kolo::size(), rank = kolo::rank();

    std::vector<float> big(1 << 20, float(rank + 1));  // above the unfused size: runs alone
    kolo::allreduce("tl/big", kolo::view(big), {.op = kolo::ReduceOp::Sum});
    if (big[0] != float(size * (size + 1) / 2)) ++failures;

    // Bursts of small tensors, several rounds: fused (and, after the first, cached).
    std::vector<std::vector<float>> small(24);
    for (int round = 0; round < 6; ++round) {
      kolo::barrier();
      std::vector<kolo::Handle> handles;
      for (std::size_t i = 0; i < small.size(); ++i) {
        small[i].assign(16 + i, float(i));
        handles.push_back(kolo::allreduce_async("tl/small/" + std::to_string(i), kolo::view(small[i]),
                                                {.op = kolo::ReduceOp::Sum}));
      }
      for (std::size_t i = 0; i < small.size(); ++i) {
        if (!handles[i].wait().ok() || small[i].back() != float(i * size)) ++failures;
      }
    }

    std::vector<int32_t> b(5, rank == 1 ? 7 : 0);
    kolo::broadcast("tl/bcast", kolo::view(b), size > 1 ? 1 : 0);
    if (b[4] != (size > 1 ? 7 : 0)) ++failures;

    std::vector<int64_t> g(2, rank);
    kolo::Handle h = kolo::allgather_async("tl/gather", kolo::view(g));
    if (!h.wait().ok() || h.output().shape[0] != 2 * size) ++failures;

    kolo::shutdown();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", world_rank, e.what());
    ++failures;
  }
  if (failures) std::fprintf(stderr, "rank %d: %d wrong results\n", world_rank, failures);
  MPI_Finalize();
  return failures ? 1 : 0;
}
