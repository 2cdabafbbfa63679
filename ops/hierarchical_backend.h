// The hierarchical allreduce, for nodes with fast links inside (NVLink, shared memory)
// and slower ones between (InfiniBand, Ethernet). With L ranks per node:
//   1. reduce-scatter inside the node: local rank i holds the node's sum of slice i;
//   2. allreduce of slice i across the nodes, among the ranks with local rank i;
//   3. allgather of the slices inside the node.
// Each rank sends only 1/L of the data across nodes. The three steps are Backends, so
// the same algorithm runs with NCCL inside the node and host-staged MPI across (GPU
// tensors), or with MPI for all three (host memory; how it is tested on one machine with
// a forced node layout). Every other collective goes to the flat backend.
#pragma once

#include <cstdint>
#include <memory>

#include "backend.h"
#include "device.h"

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

struct HierarchicalParts {
  std::unique_ptr<Backend> local;  // the ranks of this node
  std::unique_ptr<Backend> cross;  // the ranks with this local rank, one per node
  std::unique_ptr<Backend> flat;   // every rank: all collectives but allreduce
  DeviceOps* memory = nullptr;     // the buffers' device: the scratch slice, the tail copy
  int local_rank = 0;
  int local_size = 1;
};

std::unique_ptr<Backend> make_hierarchical_backend(HierarchicalParts parts);

}  // namespace kolo::ops
