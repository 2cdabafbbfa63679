// sim/collective_cost.h: α–β costs (seconds) of the collectives kolo's backends run: ring and
// recursive-doubling allreduce (what MPI_Allreduce picks between by size), ring allgather and
// reduce-scatter, binomial-tree broadcast, and the hierarchical allreduce of
// ops/hierarchical_backend.cc. Pure functions of (ranks, bytes, link cost): the equations
// are in docs/simulator.md.
#pragma once

#include <string>

#include "sim/hardware.h"

namespace kolo::sim {

// The cost of one message on a link class: alpha + bytes·beta.
struct LinkCost {
  double alpha = 0;  // s
  double beta = 0;   // s/byte
};

LinkCost link_cost(const Link& link);

// k transfers at once on one link class share its bandwidth: each sees beta·k.
LinkCost shared_by(LinkCost link, int concurrent_transfers);

// bytes: the buffer each rank holds (allreduce, broadcast), or the whole gathered /
// scattered result (allgather, reduce-scatter). p = 1 costs nothing.
enum class Collective { ring_allreduce, recursive_doubling_allreduce, ring_allgather, ring_reduce_scatter, binomial_broadcast };

std::string to_string(Collective collective);

// Every collective here costs steps·α + byte_factor·bytes·β: its shape on p ranks. The
// calibration fits α and β against the same shapes.
struct CostShape {
  double steps = 0;
  double byte_factor = 0;
};

CostShape cost_shape(Collective collective, int p);
double cost(Collective collective, int p, double bytes, LinkCost link);

double ring_allreduce(int p, double bytes, LinkCost link);
double recursive_doubling_allreduce(int p, double bytes, LinkCost link);
double ring_allgather(int p, double total_bytes, LinkCost link);
double ring_reduce_scatter(int p, double total_bytes, LinkCost link);
double binomial_broadcast(int p, double bytes, LinkCost link);

// The three phases of a hierarchical allreduce, so that a trace can show them apart.
struct HierarchicalCost {
  double reduce_scatter_in_node = 0;
  double allreduce_across_nodes = 0;
  double allgather_in_node = 0;
  double total() const { return reduce_scatter_in_node + allreduce_across_nodes + allgather_in_node; }
};

// Each of the node's ranks_per_node ranks carries its 1/ranks_per_node slice across
// nodes, all at once over the node's one inter-node link: they share its bandwidth.
HierarchicalCost hierarchical_allreduce(int ranks_per_node, int nodes, double bytes, LinkCost intra, LinkCost inter);

enum class FlatAlgorithm { ring, recursive_doubling };

// A flat (not hierarchical) allreduce over the first `ranks` ranks of a cluster filled node
// by node: it runs on the intra-node link when they all share a node, otherwise every step
// waits for the inter-node link, the slowest on the ring.
double flat_allreduce(FlatAlgorithm algorithm, int ranks, double bytes, const Hardware& hw);

}  // namespace kolo::sim
