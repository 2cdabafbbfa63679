// fault_loop's MPI profiling layer (fault_pmpi.cc): faults at exact points inside kolo.
#pragma once

namespace fault_pmpi {

// The victim stops itself in its K-th MPI_Comm_split for a process set (0: never).
extern int stop_in_split;
extern int victim;

}  // namespace fault_pmpi
