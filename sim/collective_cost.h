// sim/collective_cost.h: α–β costs (seconds) of the collectives kolo's backends run: ring and
// recursive-doubling allreduce (what a library picks between by size), Open MPI's choice
// for MPI_Allreduce and kolo's MPI backend around it, ring allgather and reduce-scatter,
// binomial-tree broadcast, and the hierarchical allreduce of ops/hierarchical_backend.cc.
// Pure functions of (ranks, bytes, link cost): the equations are in docs/simulator.md.
#pragma once

#include <string>
#include <vector>

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

// Where an allreduce's time goes: steps inside a node (a time on the node's link) and steps
// across nodes (how many, and the bytes one node's link carries each way), kept apart so
// that a shaped inter-node link can spend its token bucket on the latter.
struct Traffic {
  double in_node_s = 0;
  double cross_steps = 0;
  double cross_bytes = 0;
  double seconds(LinkCost inter) const { return in_node_s + cross_steps * inter.alpha + cross_bytes * inter.beta; }
  Traffic& operator+=(const Traffic& other);
};

Traffic operator*(double times, Traffic traffic);

enum class FlatAlgorithm { ring, recursive_doubling };

// A flat (not hierarchical) allreduce over the first `ranks` ranks of a cluster filled node
// by node: it runs on the intra-node link when they all share a node, otherwise every step
// waits for the inter-node link, the slowest on the ring.
Traffic flat_traffic(FlatAlgorithm algorithm, int ranks, double bytes, const Hardware& hw);
double flat_allreduce(FlatAlgorithm algorithm, int ranks, double bytes, const Hardware& hw);

// Rabenseifner's allreduce as Open MPI 4.1 runs it (coll/base's redscat_allgather): a
// reduce-scatter by recursive halving, partners at distance 1, 2, 4, ... among p' =
// 2^floor(log2 p) ranks, then an allgather by doubling in the reverse order. With p' < p,
// ranks 2i and 2i+1 (i < p - p') first fold into one: they swap halves, the odd one sends
// its reduced half, and it gets the whole result at the end (three messages: N/2, N/2, N);
// the others are renumbered (Open MPI's vrank). With the ranks filled node by node, a step
// stays on the intra-node link when every pair shares a node; otherwise it waits for the
// inter-node link, whose busiest node sends as many messages at once as it has ranks whose
// partner is elsewhere.
Traffic rabenseifner_traffic(int ranks, double bytes, const Hardware& hw);

// Open MPI 4.1.x's fixed choice for MPI_Allreduce of a commutative operation on `bytes`
// (coll/tuned's ompi_coll_tuned_allreduce_intra_dec_fixed, by rank count and size).
enum class OpenMpiAllreduce { reduce_then_broadcast, recursive_doubling, ring, segmented_ring, rabenseifner };
OpenMpiAllreduce open_mpi_allreduce_choice(int ranks, double bytes);

// kolo's MPI backend (ops/mpi_backend.cc): the buffer in pieces of piece_bytes, each
// through kolo's own ring when it holds at least kMpiRingMinBytesPerRank a rank, otherwise
// through MPI_Allreduce (Open MPI's choice above).
inline constexpr double kMpiRingMinBytesPerRank = 64 * 1024;
Traffic mpi_backend_traffic(int ranks, double bytes, double piece_bytes, const Hardware& hw);

// The algorithms the cluster's library may run for a flat allreduce: nccl's two, of which
// the caller takes the cheaper, or the mpi backend's one.
std::vector<Traffic> allreduce_candidates(int ranks, double bytes, double piece_bytes, const Hardware& hw);

}  // namespace kolo::sim
