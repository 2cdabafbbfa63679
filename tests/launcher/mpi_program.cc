// An MPI program started by kolorun in the tests: every rank adds its rank number in an
// MPI_Allreduce and prints what it got, so that a wrong MPI wiring (no PMIx contact,
// wrong world size) shows up as a wrong sum or a failed start.
#include <mpi.h>

#include <cstdio>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int sum = 0;
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  std::printf("rank %d of %d: sum of ranks %d\n", rank, size, sum);
  MPI_Finalize();
  return 0;
}
