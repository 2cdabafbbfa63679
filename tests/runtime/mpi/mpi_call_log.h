// Which MPI collectives this process makes, seen through MPI's profiling interface: the
// test binary defines MPI_Allgatherv and MPI_Bcast (mpi_call_log.cc), which note the call
// and pass it on to PMPI_Allgatherv and PMPI_Bcast. kolo's own calls land there too, so a
// test can see the route a collective took: over which ranks each step ran. Calls are
// noted only while an MpiCallLog exists; otherwise the wrappers cost one atomic load.
#pragma once

#include <string>
#include <vector>

namespace kolo_test {

struct MpiCall {
  std::string function;          // "MPI_Allgatherv" or "MPI_Bcast"
  std::vector<int> world_ranks;  // the communicator's ranks, as ranks of MPI_COMM_WORLD
};

// Records from construction to destruction, from every thread (kolo's background thread
// makes the calls). One at a time.
class MpiCallLog {
 public:
  MpiCallLog();
  ~MpiCallLog();
  MpiCallLog(const MpiCallLog&) = delete;
  MpiCallLog& operator=(const MpiCallLog&) = delete;

  std::vector<MpiCall> calls() const;
};

}  // namespace kolo_test
