// Which ranks share a node. MPI's shared-memory split decides it in a real job; a test
// can force a layout instead (KOLO_TEST_LOCAL_SIZE: consecutive groups of ranks act as
// nodes), so that the hierarchical collectives run on one machine as on several.
#pragma once

#include <span>
#include <vector>

namespace kolo::ops {

struct NodeLayout {
  int local_rank = 0, local_size = 1;  // within the node
  int cross_rank = 0, cross_size = 1;  // the node's index, the number of nodes
  bool operator==(const NodeLayout&) const = default;
};

// Ranks [0, local_size) form node 0, the next local_size node 1, ... Throws
// kolo::Error(InvalidArgument) when local_size does not divide size.
NodeLayout forced_node_layout(int rank, int size, int local_size);

// Where this rank sits among the nodes, as the hierarchical backend needs it.
struct NodePlacement {
  int rank = 0;                        // among every rank
  int local_rank = 0, local_size = 1;  // within this rank's node
  // The node of every rank, nodes numbered in the order of their lowest ranks (the order
  // of local rank 0's cross-node communicator). Only the allgather needs it: a node need
  // not hold consecutive ranks (mpirun --map-by node deals them out round-robin).
  std::vector<int> node_of_rank;
};

// node_of_rank from every rank's node leader (the lowest rank of its node).
std::vector<int> nodes_by_leader(std::span<const int> leader_of_rank);

}  // namespace kolo::ops
