// fault_loop's MPI profiling layer (the MPI standard's PMPI interface): fault_loop defines
// two MPI functions, kolo's calls reach these, and each calls MPI's own PMPI_ one. This puts a
// fault at an exact point inside kolo without a hook in kolo itself:
//
//   MPI_Init_thread   prints "rank R pid P host H" as soon as MPI knows the rank, so that the
//                     fault test can watch every process even when kolo::init() never returns
//   MPI_Comm_split    with fault_pmpi::stop_in_split = K, rank fault_pmpi::victim stops
//                     itself (SIGSTOP) inside its K-th split for a process set, before MPI's
//                     split: the other ranks are then inside theirs, waiting for it
#include "fault_pmpi.h"

#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>

namespace fault_pmpi {

int stop_in_split = 0;
int victim = 2;

namespace {

int g_rank = -1;
int g_process_set_splits = 0;

}  // namespace
}  // namespace fault_pmpi

extern "C" int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  const int code = PMPI_Init_thread(argc, argv, required, provided);
  if (code != MPI_SUCCESS) return code;
  PMPI_Comm_rank(MPI_COMM_WORLD, &fault_pmpi::g_rank);
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  std::printf("rank %d pid %ld host %s\n", fault_pmpi::g_rank, static_cast<long>(::getpid()), host);
  std::fflush(stdout);
  return code;
}

extern "C" int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm* out) {
  using namespace fault_pmpi;
  // A process set's split (runtime/mpi_transport.cc) is the only one with a rank outside the
  // new communicator: the victim is kept out of the sets fault_loop makes.
  if (color == MPI_UNDEFINED && g_rank == victim && stop_in_split > 0 && ++g_process_set_splits == stop_in_split) {
    std::printf("rank %d stops itself inside MPI_Comm_split for a process set\n", g_rank);
    std::fflush(stdout);
    ::raise(SIGSTOP);
  }
  return PMPI_Comm_split(comm, color, key, out);
}
