// sim/collective_cost.cc: the closed forms of the collectives, as (steps, byte factor)
// shapes: the number of messages on the critical path, and the bytes one rank sends along
// it per byte of buffer.
#include "sim/collective_cost.h"

#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

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

Traffic& Traffic::operator+=(const Traffic& other) {
  in_node_s += other.in_node_s;
  cross_steps += other.cross_steps;
  cross_bytes += other.cross_bytes;
  return *this;
}

Traffic operator*(double times, Traffic traffic) {
  return {times * traffic.in_node_s, times * traffic.cross_steps, times * traffic.cross_bytes};
}

namespace {

// A collective of this shape over the first `ranks` ranks: on the intra-node link when they
// share a node, otherwise every step waits for the inter-node link.
Traffic flat_shape_traffic(CostShape shape, int ranks, double bytes, const Hardware& hw) {
  if (ranks <= hw.ranks_per_node)
    return {shape.steps * link_cost(hw.intra_node).alpha + shape.byte_factor * bytes * link_cost(hw.intra_node).beta, 0, 0};
  return {0, shape.steps, shape.byte_factor * bytes};
}

}  // namespace

Traffic flat_traffic(FlatAlgorithm algorithm, int ranks, double bytes, const Hardware& hw) {
  check_ranks(ranks, "flat_allreduce");
  const Collective collective =
      algorithm == FlatAlgorithm::ring ? Collective::ring_allreduce : Collective::recursive_doubling_allreduce;
  return flat_shape_traffic(cost_shape(collective, ranks), ranks, bytes, hw);
}

double flat_allreduce(FlatAlgorithm algorithm, int ranks, double bytes, const Hardware& hw) {
  return flat_traffic(algorithm, ranks, bytes, hw).seconds(link_cost(hw.inter_node));
}

namespace {

// One message on Rabenseifner's critical path: its share of the buffer, whether every pair
// of the step shares a node, and the most ranks of one node sending across at once.
struct RabenseifnerStep {
  double share = 0;
  bool in_node = true;
  int senders = 0;
};

// The steps for `ranks` ranks filled `per_node` to a node: they depend on the layout only,
// not on the buffer, so each layout is worked out once (per thread, so that callers on
// several threads need no lock).
const std::vector<RabenseifnerStep>& rabenseifner_steps(int ranks, int per_node) {
  thread_local std::map<std::pair<int, int>, std::vector<RabenseifnerStep>> known;
  auto [it, fresh] = known.try_emplace({ranks, per_node});
  if (!fresh) return it->second;
  const int pof2 = static_cast<int>(std::bit_floor(static_cast<unsigned>(ranks)));
  const int folded = ranks - pof2;  // pairs (2i, 2i + 1), i < folded, fold into rank 2i
  auto node = [per_node](int rank) { return rank / per_node; };
  auto real = [folded](int vrank) { return vrank < folded ? 2 * vrank : vrank + folded; };
  // A step carrying these (sender, receiver) messages at once.
  auto step = [&](double share, const std::vector<std::pair<int, int>>& pairs) {
    std::map<int, int> crossing;  // node -> its ranks sending to another node
    for (const auto& [from, to] : pairs)
      if (node(from) != node(to)) ++crossing[node(from)];
    int senders = 0;
    for (const auto& [n, count] : crossing) senders = std::max(senders, count);
    return RabenseifnerStep{share, crossing.empty(), senders};
  };
  std::vector<std::pair<int, int>> to_odd, to_even, both;
  for (int i = 0; i < folded; ++i) {
    to_odd.push_back({2 * i, 2 * i + 1});
    to_even.push_back({2 * i + 1, 2 * i});
  }
  both = to_odd;
  both.insert(both.end(), to_even.begin(), to_even.end());
  std::vector<RabenseifnerStep> steps;
  if (folded > 0) steps.push_back(step(0.5, both)), steps.push_back(step(0.5, to_even));  // swap halves; odd sends its sum
  std::vector<RabenseifnerStep> halving;
  for (int distance = 1; distance < pof2; distance *= 2) {
    std::vector<std::pair<int, int>> pairs;
    for (int v = 0; v < pof2; ++v) pairs.push_back({real(v), real(v ^ distance)});
    halving.push_back(step(1.0 / (2.0 * distance), pairs));  // half of what the rank still holds
  }
  steps.insert(steps.end(), halving.begin(), halving.end());
  steps.insert(steps.end(), halving.rbegin(), halving.rend());  // the allgather sends it back
  if (folded > 0) steps.push_back(step(1.0, to_odd));           // the whole result to the odd ranks
  it->second = std::move(steps);
  return it->second;
}

}  // namespace

Traffic rabenseifner_traffic(int ranks, double bytes, const Hardware& hw) {
  check_ranks(ranks, "rabenseifner_traffic");
  const LinkCost intra = link_cost(hw.intra_node);
  Traffic traffic;
  for (const RabenseifnerStep& s : rabenseifner_steps(ranks, std::max(1, hw.ranks_per_node))) {
    if (s.in_node) {
      traffic.in_node_s += intra.alpha + s.share * bytes * intra.beta;
    } else {
      traffic.cross_steps += 1;
      traffic.cross_bytes += s.share * bytes * s.senders;
    }
  }
  return traffic;
}

OpenMpiAllreduce open_mpi_allreduce_choice(int ranks, double bytes) {
  check_ranks(ranks, "open_mpi_allreduce_choice");
  using enum OpenMpiAllreduce;
  // Rows of Open MPI 4.1's table: for rank counts below `ranks_below`, the algorithm of the
  // first size bound the buffer is below, else `larger`.
  struct Row {
    int ranks_below;
    std::vector<std::pair<double, OpenMpiAllreduce>> below;
    OpenMpiAllreduce larger;
  };
  static const std::vector<Row> kTable = {
      {4, {{8, ring}, {4096, recursive_doubling}, {8192, ring}, {16384, recursive_doubling}, {65536, ring},
           {262144, segmented_ring}}, rabenseifner},
      {8, {{16, ring}, {8192, recursive_doubling}}, rabenseifner},
      {16, {{8192, recursive_doubling}}, rabenseifner},
      {32, {{64, segmented_ring}, {4096, recursive_doubling}}, rabenseifner},
      {64, {{128, segmented_ring}}, rabenseifner},
      {128, {{262144, recursive_doubling}}, rabenseifner},
      {256, {{131072, reduce_then_broadcast}, {262144, recursive_doubling}}, rabenseifner},
      {512, {{4096, reduce_then_broadcast}}, rabenseifner},
      {2048, {{2048, reduce_then_broadcast}, {16384, recursive_doubling}}, rabenseifner},
      {4096, {{2048, reduce_then_broadcast}, {4096, segmented_ring}, {16384, recursive_doubling}}, rabenseifner},
      {std::numeric_limits<int>::max(),
       {{2048, reduce_then_broadcast}, {16384, segmented_ring}, {32768, recursive_doubling}}, rabenseifner},
  };
  for (const Row& row : kTable) {
    if (ranks >= row.ranks_below) continue;
    for (const auto& [bound, algorithm] : row.below)
      if (bytes < bound) return algorithm;
    return row.larger;
  }
  return rabenseifner;  // not reached: the last row takes every rank count
}

namespace {

Traffic mpi_allreduce_traffic(int ranks, double bytes, const Hardware& hw) {
  switch (open_mpi_allreduce_choice(ranks, bytes)) {
    case OpenMpiAllreduce::ring:
    case OpenMpiAllreduce::segmented_ring: return flat_traffic(FlatAlgorithm::ring, ranks, bytes, hw);
    case OpenMpiAllreduce::recursive_doubling: return flat_traffic(FlatAlgorithm::recursive_doubling, ranks, bytes, hw);
    case OpenMpiAllreduce::rabenseifner: return rabenseifner_traffic(ranks, bytes, hw);
    case OpenMpiAllreduce::reduce_then_broadcast: {  // a binomial reduce, then a binomial broadcast
      const CostShape tree = cost_shape(Collective::binomial_broadcast, ranks);
      return flat_shape_traffic({2 * tree.steps, 2 * tree.byte_factor}, ranks, bytes, hw);
    }
  }
  throw std::invalid_argument("mpi_allreduce_traffic: unknown algorithm");
}

}  // namespace

Traffic mpi_backend_traffic(int ranks, double bytes, double piece_bytes, const Hardware& hw) {
  check_ranks(ranks, "mpi_backend_traffic");
  if (ranks == 1 || bytes <= 0) return {};
  if (!(piece_bytes > 0)) throw std::invalid_argument("mpi_backend_traffic: the piece must be positive");
  auto piece = [&](double piece_size) {
    return piece_size >= kMpiRingMinBytesPerRank * ranks ? flat_traffic(FlatAlgorithm::ring, ranks, piece_size, hw)
                                                         : mpi_allreduce_traffic(ranks, piece_size, hw);
  };
  const double whole_pieces = std::floor(bytes / piece_bytes);
  const double rest = bytes - whole_pieces * piece_bytes;
  Traffic traffic = whole_pieces > 0 ? whole_pieces * piece(piece_bytes) : Traffic{};
  if (rest > 0) traffic += piece(rest);
  return traffic;
}

std::vector<Traffic> allreduce_candidates(int ranks, double bytes, double piece_bytes, const Hardware& hw) {
  if (hw.collectives == Collectives::mpi) return {mpi_backend_traffic(ranks, bytes, piece_bytes, hw)};
  return {flat_traffic(FlatAlgorithm::ring, ranks, bytes, hw),
          flat_traffic(FlatAlgorithm::recursive_doubling, ranks, bytes, hw)};
}

}  // namespace kolo::sim
