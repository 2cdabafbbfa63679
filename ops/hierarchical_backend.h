// The hierarchical collectives, for nodes with fast links inside (NVLink, shared memory)
// and slower ones between (InfiniBand, Ethernet). The allreduce, with L ranks per node:
//   1. reduce-scatter inside the node: local rank i holds the node's sum of slice i;
//   2. allreduce of slice i across the nodes, among the ranks with local rank i;
//   3. allgather of the slices inside the node.
// Each rank sends only 1/L of the data across nodes. The allgather (Horovod's):
//   1. allgather inside the node: every rank of the node holds the node's block;
//   2. local rank 0 of each node allgathers the node blocks across the nodes;
//   3. local rank 0 broadcasts the other nodes' blocks inside the node.
// Each takes the hierarchical route only where HierarchicalRoutes says so. The steps are
// Backends, so the same algorithms run with NCCL inside the node and host-staged MPI
// across (GPU tensors), or with MPI for all three (host memory; how they are tested on one
// machine with a forced node layout). Every other collective goes to the flat backend.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend.h"
#include "device.h"
#include "node_layout.h"

namespace kolo::ops {

// How `count` elements are split over the L ranks of a node: L equal slices of
// `per_rank` elements, then a tail of fewer than L elements that every rank reduces
// whole (so that the in-node collectives only ever see equal counts, which NCCL needs).
struct SliceLayout {
  int64_t per_rank = 0;
  int64_t tail = 0;
  int64_t slice_offset(int local_rank) const { return per_rank * local_rank; }
  int64_t tail_offset(int local_size) const { return per_rank * local_size; }
  bool operator==(const SliceLayout&) const = default;
};
SliceLayout slice_layout(int64_t count, int local_size);

// One allgather in node order: node 0's ranks' parts (by local rank), then node 1's, ...
// That is rank order when every node holds consecutive ranks (mpirun's default placement,
// KOLO_TEST_LOCAL_SIZE): the parts are then gathered straight into the output. Otherwise
// they are gathered into scratch memory and each part is moved to its place.
struct NodeGatherPlan {
  std::vector<int64_t> local_counts;  // this node's ranks' parts, by local rank
  std::vector<int64_t> node_counts;   // every node's block, by node
  int64_t node_offset = 0;            // where this node's block starts, in node order
  int64_t node_count = 0;             // this node's block
  int64_t total = 0;
  bool in_rank_order = true;
  struct Move {
    int64_t from = 0, to = 0, count = 0;  // elements: node order offset -> output offset
    bool operator==(const Move&) const = default;
  };
  std::vector<Move> moves;  // the non-empty parts, when not in rank order
};
// Throws kolo::Error(InvalidArgument) when counts and placement.node_of_rank disagree.
NodeGatherPlan plan_node_gather(std::span<const int64_t> counts, const NodePlacement& placement);

// Which collectives take the hierarchical route; every other one goes to `flat`.
struct HierarchicalRoutes {
  bool allreduce = false;
  bool allgather = false;
  bool any() const { return allreduce || allgather; }
};

struct HierarchicalParts {
  std::unique_ptr<Backend> local;  // the ranks of this node
  std::unique_ptr<Backend> cross;  // the ranks with this local rank, one per node
  std::unique_ptr<Backend> flat;   // every rank: the collectives not taking the hierarchical route
  DeviceOps* memory = nullptr;     // the buffers' device: scratch, the tail copy, the allgather's moves
  NodePlacement placement;         // node_of_rank is needed for the allgather only
  HierarchicalRoutes routes;
};

std::unique_ptr<Backend> make_hierarchical_backend(HierarchicalParts parts);

}  // namespace kolo::ops
