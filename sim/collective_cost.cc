// sim/collective_cost.cc: the closed forms of the collectives, as (steps, byte factor)
// shapes: the number of messages on the critical path, and the bytes one rank sends along
// it per byte of buffer.
#include "sim/collective_cost.h"

#include <bit>
#include <stdexcept>
#include <string>

namespace kolo::sim {
namespace {

void check_ranks(int p, const std::string& what) {
  if (p < 1) throw std::invalid_argument(what + ": needs at least 1 rank, got " + std::to_string(p));
}

int ceil_log2(int p) { return p <= 1 ? 0 : std::bit_width(static_cast<unsigned>(p - 1)); }

}  // namespace

std::string to_string(Collective collective) {
  switch (collective) {
    case Collective::ring_allreduce: return "ring_allreduce";
    case Collective::recursive_doubling_allreduce: return "recursive_doubling_allreduce";
    case Collective::ring_allgather: return "ring_allgather";
    case Collective::ring_reduce_scatter: return "ring_reduce_scatter";
    case Collective::binomial_broadcast: return "binomial_broadcast";
  }
  return "unknown";
}

CostShape cost_shape(Collective collective, int p) {
  check_ranks(p, to_string(collective));
  if (p == 1) return {};
  const double ring_pass_steps = p - 1;                          // each moves one of p slices
  const double ring_pass_bytes = static_cast<double>(p - 1) / p;
  switch (collective) {
    case Collective::ring_allreduce:  // a reduce-scatter, then an allgather
      return {2 * ring_pass_steps, 2 * ring_pass_bytes};
    case Collective::ring_allgather:
    case Collective::ring_reduce_scatter:
      return {ring_pass_steps, ring_pass_bytes};
    case Collective::recursive_doubling_allreduce: {
      // log2(p) exchanges of the whole buffer. A p that is not a power of two first folds
      // the extra ranks into partners and sends them the result at the end (MPICH's and
      // Open MPI's scheme): two more whole-buffer steps.
      const bool power_of_two = std::has_single_bit(static_cast<unsigned>(p));
      const double steps = power_of_two ? ceil_log2(p) : (ceil_log2(p) - 1) + 2;
      return {steps, steps};
    }
    case Collective::binomial_broadcast:
      return {static_cast<double>(ceil_log2(p)), static_cast<double>(ceil_log2(p))};
  }
  throw std::invalid_argument("cost_shape: unknown collective");
}

double cost(Collective collective, int p, double bytes, LinkCost link) {
  const CostShape shape = cost_shape(collective, p);
  return shape.steps * link.alpha + shape.byte_factor * bytes * link.beta;
}

LinkCost link_cost(const Link& link) {
  if (!(link.achieved_fraction > 0 && link.achieved_fraction <= 1))
    throw std::invalid_argument("a link's achieved share of its line rate must be in (0, 1], got " +
                                std::to_string(link.achieved_fraction) + " (resolve() fills in the default)");
  return {link.alpha_s, link.beta_s_per_byte / link.achieved_fraction};
}

LinkCost shared_by(LinkCost link, int concurrent_transfers) {
  check_ranks(concurrent_transfers, "shared_by");
  return {link.alpha, link.beta * concurrent_transfers};
}

double ring_allreduce(int p, double bytes, LinkCost link) { return cost(Collective::ring_allreduce, p, bytes, link); }
double ring_reduce_scatter(int p, double bytes, LinkCost link) { return cost(Collective::ring_reduce_scatter, p, bytes, link); }
double ring_allgather(int p, double bytes, LinkCost link) { return cost(Collective::ring_allgather, p, bytes, link); }
double binomial_broadcast(int p, double bytes, LinkCost link) { return cost(Collective::binomial_broadcast, p, bytes, link); }
double recursive_doubling_allreduce(int p, double bytes, LinkCost link) {
  return cost(Collective::recursive_doubling_allreduce, p, bytes, link);
}

HierarchicalCost hierarchical_allreduce(int ranks_per_node, int nodes, double bytes, LinkCost intra, LinkCost inter) {
  check_ranks(ranks_per_node, "hierarchical_allreduce (ranks per node)");
  check_ranks(nodes, "hierarchical_allreduce (nodes)");
  const double slice = bytes / ranks_per_node;
  return HierarchicalCost{
      .reduce_scatter_in_node = ring_reduce_scatter(ranks_per_node, bytes, intra),
      .allreduce_across_nodes = ring_allreduce(nodes, slice, shared_by(inter, ranks_per_node)),
      .allgather_in_node = ring_allgather(ranks_per_node, bytes, intra),
  };
}

double flat_allreduce(FlatAlgorithm algorithm, int ranks, double bytes, const Hardware& hw) {
  check_ranks(ranks, "flat_allreduce");
  const LinkCost link = link_cost(ranks <= hw.ranks_per_node ? hw.intra_node : hw.inter_node);
  return cost(algorithm == FlatAlgorithm::ring ? Collective::ring_allreduce : Collective::recursive_doubling_allreduce,
              ranks, bytes, link);
}

}  // namespace kolo::sim
