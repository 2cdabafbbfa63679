// The MPI backend: collectives on CPU memory over a duplicate of the communicator kolo
// was given, so that the program's own MPI traffic never interleaves with kolo's.
#pragma once

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "backend.h"
#include "clock.h"
#include "node_layout.h"

namespace kolo::ops {

struct MpiOptions {
  // Allreduces larger than this are run as a pipeline of pieces of this size: on shared
  // memory, cache-sized pieces reduce much faster than one large call (docs/perf.md).
  int64_t allreduce_chunk_bytes = 0;  // 0: kDefaultPieceBytesPerRank (1 MiB) per rank
  // How long a control message may wait for the other ranks before kolo declares them
  // lost (the background thread of a healthy rank answers within one cycle).
  std::chrono::milliseconds control_timeout{std::chrono::seconds(300)};
  // Counts every piece of a data collective that completes (a call, or one piece of a
  // pipelined one), so that a watcher on another thread can tell a long collective that
  // still moves from one that is stuck. Not owned; nullptr: not counted.
  std::atomic<uint64_t>* progress = nullptr;
};

struct TopologyOptions {
  // > 0: consecutive groups of this many ranks act as nodes (tests; KOLO_TEST_LOCAL_SIZE).
  // Rank 0's value applies to every rank.
  int forced_local_size = 0;
};

// Owns the duplicated communicator, the node topology derived from it, and the node
// (local) and cross-node communicators the hierarchical collectives run on.
class MpiContext {
 public:
  explicit MpiContext(MPI_Comm parent, const TopologyOptions& options = {});
  ~MpiContext();
  MpiContext(const MpiContext&) = delete;
  MpiContext& operator=(const MpiContext&) = delete;

  MPI_Comm comm() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  int cross_rank() const { return cross_rank_; }
  int cross_size() const { return cross_size_; }
  MPI_Comm local_comm() const { return local_; }  // the ranks of this node
  MPI_Comm cross_comm() const { return cross_; }  // the ranks with this local rank
  // Every node runs the same number of ranks (what the hierarchical allreduce needs).
  bool homogeneous() const { return largest_node_ == smallest_node_; }
  int largest_node() const { return largest_node_; }
  int smallest_node() const { return smallest_node_; }
  // This rank's place among the nodes, with the node of every rank.
  NodePlacement placement() const { return {rank_, local_rank_, local_size_, node_of_rank_}; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL, local_ = MPI_COMM_NULL, cross_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  int local_rank_ = 0, local_size_ = 1;
  int cross_rank_ = 0, cross_size_ = 1;
  int largest_node_ = 1, smallest_node_ = 1;
  std::vector<int> node_of_rank_;
};

std::unique_ptr<Backend> make_mpi_backend(const MpiContext& context, const MpiOptions& options);
// The same over any communicator kolo owns (a node's, or the cross-node one).
std::unique_ptr<Backend> make_mpi_backend(MPI_Comm comm, const MpiOptions& options);
// Its waits end after options.control_timeout on `clock`.
std::unique_ptr<ControlChannel> make_mpi_control_channel(const MpiContext& context,
                                                         const MpiOptions& options,
                                                         const Clock& clock);

// The node of every rank of `comm` (NodePlacement::node_of_rank), given this rank's node:
// `local`, split from `comm` with the rank as key, so that local rank 0 is the node's
// lowest rank. Collective over `comm`.
std::vector<int> node_of_every_rank(MPI_Comm comm, MPI_Comm local);

// Where each rank's message starts in a gather of `lengths` (one per rank, as the ranks
// sent them), and the total after the last. The lengths are other ranks' words: a
// negative one, or a total past INT_MAX (MPI's counts), throws kolo::Error(CommFailure)
// before anything is sized by them.
std::vector<int> message_offsets(const std::vector<int>& lengths);

// Throws kolo::Error(CommFailure) naming `what` when `rc` is not MPI_SUCCESS.
void check_mpi(int rc, const char* what);

}  // namespace kolo::ops
