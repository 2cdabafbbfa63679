// Which ranks share a node. MPI's shared-memory split decides it in a real job; a test
// can force a layout instead (KOLO_TEST_LOCAL_SIZE: consecutive groups of ranks act as
// nodes), so that the hierarchical allreduce runs on one machine as on several.
#pragma once

namespace kolo::ops {

struct NodeLayout {
  int local_rank = 0, local_size = 1;  // within the node
  int cross_rank = 0, cross_size = 1;  // the node's index, the number of nodes
  bool operator==(const NodeLayout&) const = default;
};

// Ranks [0, local_size) form node 0, the next local_size node 1, ... Throws
// kolo::Error(InvalidArgument) when local_size does not divide size.
NodeLayout forced_node_layout(int rank, int size, int local_size);

}  // namespace kolo::ops
