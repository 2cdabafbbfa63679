#include <string>
#include <vector>

#include "mpi_backend.h"
#include "node_layout.h"

namespace kolo::ops {

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  throw Error(StatusCode::CommFailure,
              std::string("MPI error in ") + what + ": " + std::string(text, length));
}

std::vector<int> node_of_every_rank(MPI_Comm comm, MPI_Comm local) {
  // A node is named by its leader, local rank 0, which the group translation finds
  // without a message.
  MPI_Group local_group, group;
  check_mpi(MPI_Comm_group(local, &local_group), "MPI_Comm_group");
  check_mpi(MPI_Comm_group(comm, &group), "MPI_Comm_group");
  const int zero = 0;
  int leader = 0;
  const int rc = MPI_Group_translate_ranks(local_group, 1, &zero, group, &leader);
  MPI_Group_free(&local_group);
  MPI_Group_free(&group);
  check_mpi(rc, "MPI_Group_translate_ranks");
  int size = 0;
  MPI_Comm_size(comm, &size);
  std::vector<int> leaders(static_cast<std::size_t>(size));
  check_mpi(MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, comm), "MPI_Allgather (nodes)");
  return nodes_by_leader(leaders);
}

MpiContext::MpiContext(MPI_Comm parent, const TopologyOptions& options) {
  check_mpi(MPI_Comm_dup(parent, &comm_), "MPI_Comm_dup");
  // Errors come back as return codes that kolo turns into failed handles, instead of
  // MPI's default of aborting the job from inside the call.
  check_mpi(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);

  // Rank 0's forced layout applies everywhere, so that every rank splits alike (or
  // every rank fails alike).
  int forced = options.forced_local_size;
  check_mpi(MPI_Bcast(&forced, 1, MPI_INT, 0, comm_), "MPI_Bcast (node layout)");
  if (forced > 0) {
    const NodeLayout layout = forced_node_layout(rank_, size_, forced);
    check_mpi(MPI_Comm_split(comm_, layout.cross_rank, rank_, &local_), "MPI_Comm_split (node)");
  } else {
    check_mpi(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local_),
              "MPI_Comm_split_type");
  }
  check_mpi(MPI_Comm_set_errhandler(local_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  MPI_Comm_rank(local_, &local_rank_);
  MPI_Comm_size(local_, &local_size_);
  // Ranks with the same local rank, one per node: its rank is the node's index when
  // every node runs the same number of ranks (the layout mpirun and srun produce).
  check_mpi(MPI_Comm_split(comm_, local_rank_, rank_, &cross_), "MPI_Comm_split");
  check_mpi(MPI_Comm_set_errhandler(cross_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  MPI_Comm_rank(cross_, &cross_rank_);
  MPI_Comm_size(cross_, &cross_size_);

  int sizes[2] = {local_size_, -local_size_};
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, sizes, 2, MPI_INT, MPI_MAX, comm_), "MPI_Allreduce (node sizes)");
  largest_node_ = sizes[0];
  smallest_node_ = -sizes[1];
  node_of_rank_ = node_of_every_rank(comm_, local_);
}

MpiContext::~MpiContext() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  for (MPI_Comm* c : {&cross_, &local_, &comm_})
    if (*c != MPI_COMM_NULL) MPI_Comm_free(c);
}

}  // namespace kolo::ops
