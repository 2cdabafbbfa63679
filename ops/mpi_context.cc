#include "mpi_backend.h"

#include <string>

namespace kolo::ops {

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  throw Error(StatusCode::CommFailure,
              std::string("MPI error in ") + what + ": " + std::string(text, length));
}

MpiContext::MpiContext(MPI_Comm parent) {
  check_mpi(MPI_Comm_dup(parent, &comm_), "MPI_Comm_dup");
  // Errors come back as return codes that kolo turns into failed handles, instead of
  // MPI's default of aborting the job from inside the call.
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);

  MPI_Comm local = MPI_COMM_NULL, cross = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local),
            "MPI_Comm_split_type");
  MPI_Comm_rank(local, &local_rank_);
  MPI_Comm_size(local, &local_size_);
  // Ranks with the same local rank, one per node: its rank is the node's index when
  // every node runs the same number of ranks (the layout mpirun and srun produce).
  check_mpi(MPI_Comm_split(comm_, local_rank_, rank_, &cross), "MPI_Comm_split");
  MPI_Comm_rank(cross, &cross_rank_);
  MPI_Comm_size(cross, &cross_size_);
  MPI_Comm_free(&local);
  MPI_Comm_free(&cross);
}

MpiContext::~MpiContext() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

}  // namespace kolo::ops
