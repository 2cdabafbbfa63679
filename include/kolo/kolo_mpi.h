// kolo on a communicator of the program's: the one part of kolo's API that needs MPI's
// headers, kept out of kolo/kolo.h so that code that embeds kolo (and bindings to other
// languages) compiles without them. A program that includes this header uses MPI itself:
// it puts MPI on its own include path (CMake: find_package(MPI), MPI::MPI_C or
// MPI::MPI_CXX), as kolo::kolo passes MPI on to the link only.
//
//   MPI_Comm_split(MPI_COMM_WORLD, group, world_rank, &group_comm);
//   kolo::init(group_comm);
#pragma once

#include <mpi.h>

#include "kolo/kolo.h"

namespace kolo {

// Starts kolo on `comm`: kolo works on its own duplicate of it, and rank() and size() are
// those in `comm`. The program must have initialised MPI with MPI_THREAD_MULTIPLE and
// keeps MPI_Finalize; every rank of `comm` calls it (it is collective). Throws
// kolo::Error for MPI_COMM_NULL, or when MPI is not initialised. See docs/embedding.md.
void init(MPI_Comm comm);
// The same with static process sets (see init(process_sets) in kolo.h); their ranks are
// ranks of `comm`.
void init(MPI_Comm comm, const std::vector<std::vector<int>>& process_sets);

}  // namespace kolo
