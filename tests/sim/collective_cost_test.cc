// The collectives' costs equal their closed forms, computed here independently.
#include <catch2/catch.hpp>

#include <cmath>

#include "sim/collective_cost.h"

using namespace kolo::sim;

namespace {
const LinkCost kLink{.alpha = 3e-6, .beta = 1.0 / 12.5e9};
const double kSizes[] = {0.0, 4096.0, 1 << 20, 100e6};
}  // namespace

TEST_CASE("a ring allreduce of N bytes on p ranks costs 2(p-1)a + 2(p-1)/p N b") {
  for (int p : {1, 2, 3, 4, 7, 16, 1024})
    for (double n : kSizes) {
      const double expected = 2.0 * (p - 1) * kLink.alpha + 2.0 * (p - 1) / p * n * kLink.beta;
      CHECK(ring_allreduce(p, n, kLink) == Approx(expected).epsilon(1e-12).margin(0));
    }
}

TEST_CASE("a ring allgather and a ring reduce-scatter each cost (p-1)a + (p-1)/p N b") {
  for (int p : {1, 2, 5, 64})
    for (double n : kSizes) {
      const double expected = (p - 1) * kLink.alpha + double(p - 1) / p * n * kLink.beta;
      CHECK(ring_allgather(p, n, kLink) == Approx(expected).epsilon(1e-12).margin(0));
      CHECK(ring_reduce_scatter(p, n, kLink) == Approx(expected).epsilon(1e-12).margin(0));
    }
}

TEST_CASE("recursive doubling takes log2 p whole-buffer steps, two more when p is not a power of two") {
  const double step = kLink.alpha + 1e6 * kLink.beta;
  CHECK(recursive_doubling_allreduce(1, 1e6, kLink) == 0);
  CHECK(recursive_doubling_allreduce(2, 1e6, kLink) == Approx(1 * step));
  CHECK(recursive_doubling_allreduce(8, 1e6, kLink) == Approx(3 * step));
  CHECK(recursive_doubling_allreduce(6, 1e6, kLink) == Approx((2 + 2) * step));
  CHECK(recursive_doubling_allreduce(1024, 1e6, kLink) == Approx(10 * step));
}

TEST_CASE("a binomial broadcast takes ceil(log2 p) whole-buffer steps") {
  const double step = kLink.alpha + 1e6 * kLink.beta;
  CHECK(binomial_broadcast(1, 1e6, kLink) == 0);
  CHECK(binomial_broadcast(2, 1e6, kLink) == Approx(step));
  CHECK(binomial_broadcast(5, 1e6, kLink) == Approx(3 * step));
  CHECK(binomial_broadcast(512, 1e6, kLink) == Approx(9 * step));
}

TEST_CASE("k transfers sharing a link each see k times its beta, and the same alpha") {
  const LinkCost shared = shared_by(kLink, 4);
  CHECK(shared.alpha == kLink.alpha);
  CHECK(shared.beta == 4 * kLink.beta);
  CHECK(ring_allreduce(8, 1e6, shared) > ring_allreduce(8, 1e6, kLink));
}

TEST_CASE("a hierarchical allreduce is the sum of its phases, its cross-node slices sharing the node's link") {
  const LinkCost intra{.alpha = 2e-6, .beta = 1.0 / 50e9};
  const LinkCost inter{.alpha = 1.5e-6, .beta = 1.0 / 12.5e9};
  for (int local : {1, 2, 4, 8})
    for (int nodes : {1, 2, 16, 128}) {
      const double n = 100e6;
      const HierarchicalCost h = hierarchical_allreduce(local, nodes, n, intra, inter);
      CHECK(h.reduce_scatter_in_node == Approx(ring_reduce_scatter(local, n, intra)));
      CHECK(h.allgather_in_node == Approx(ring_allgather(local, n, intra)));
      // Each of the `local` slices crosses at the node link's bandwidth / local.
      const double across = 2.0 * (nodes - 1) * inter.alpha + 2.0 * (nodes - 1) / nodes * (n / local) * (inter.beta * local);
      CHECK(h.allreduce_across_nodes == Approx(across).margin(1e-15));
      CHECK(h.total() == Approx(h.reduce_scatter_in_node + h.allreduce_across_nodes + h.allgather_in_node));
    }
}

TEST_CASE("a flat allreduce runs on the intra-node link inside one node and on the inter-node link across nodes") {
  Hardware hw;
  hw.ranks_per_node = 4;
  hw.nodes = 4;
  hw.intra_node = {LinkKind::nvlink, 2e-6, 1.0 / 50e9};
  hw.inter_node = {LinkKind::infiniband, 1.5e-6, 1.0 / 12.5e9};
  CHECK(flat_allreduce(FlatAlgorithm::ring, 4, 1e8, hw) == Approx(ring_allreduce(4, 1e8, link_cost(hw.intra_node))));
  CHECK(flat_allreduce(FlatAlgorithm::ring, 5, 1e8, hw) == Approx(ring_allreduce(5, 1e8, link_cost(hw.inter_node))));
  CHECK(flat_allreduce(FlatAlgorithm::recursive_doubling, 16, 1e3, hw) ==
        Approx(recursive_doubling_allreduce(16, 1e3, link_cost(hw.inter_node))));
}

namespace {
Hardware two_level(int ranks_per_node, int nodes) {
  Hardware hw;
  hw.ranks_per_node = ranks_per_node;
  hw.nodes = nodes;
  hw.intra_node = {LinkKind::shared_memory, 10e-6, 1.0 / 4e9};
  hw.inter_node = {LinkKind::ethernet, 25e-6, 1.0 / 0.125e9};
  return hw;
}
}  // namespace

TEST_CASE("Rabenseifner inside one node moves a ring's bytes in 2 log2 p steps") {
  const Hardware hw = two_level(8, 1);
  const LinkCost intra = link_cost(hw.intra_node);
  for (int p : {2, 4, 8}) {
    const double n = 1e6;
    const double expected = 2 * std::log2(p) * intra.alpha + 2.0 * (p - 1) / p * n * intra.beta;
    const Traffic t = rabenseifner_traffic(p, n, hw);
    CHECK(t.in_node_s == Approx(expected).epsilon(1e-12));
    CHECK(t.cross_steps == 0);
    CHECK(t.cross_bytes == 0);
  }
}

TEST_CASE("Rabenseifner over 2 nodes of 2 ranks: the halving's first step stays in the node, the second crosses") {
  // Ranks 0 1 | 2 3. Reduce-scatter: partners at distance 1 (same node) swap N/2, then at
  // distance 2 (across) N/4; the allgather repeats both. Across, both ranks of a node send
  // their N/4 over its one link: N/2 a step, N in all, against a ring's 2(p-1)/p N = 1.5 N.
  const Hardware hw = two_level(2, 2);
  const LinkCost intra = link_cost(hw.intra_node);
  const double n = 249e3;
  const Traffic t = rabenseifner_traffic(4, n, hw);
  CHECK(t.in_node_s == Approx(2 * (intra.alpha + n / 2 * intra.beta)).epsilon(1e-12));
  CHECK(t.cross_steps == 2);
  CHECK(t.cross_bytes == Approx(n).epsilon(1e-12));
  const Traffic ring = flat_traffic(FlatAlgorithm::ring, 4, n, hw);
  CHECK(ring.cross_steps == 6);
  CHECK(ring.cross_bytes == Approx(1.5 * n).epsilon(1e-12));
}

TEST_CASE("Rabenseifner on 6 ranks folds two pairs first (N/2 each way, N/2 back) and sends them N at the end") {
  const Hardware hw = two_level(8, 1);
  const LinkCost intra = link_cost(hw.intra_node);
  const double n = 1e6;
  const double folded = 2 * (intra.alpha + n / 2 * intra.beta) + (intra.alpha + n * intra.beta);
  const double halving = 2 * (intra.alpha + n / 2 * intra.beta) + 2 * (intra.alpha + n / 4 * intra.beta);
  CHECK(rabenseifner_traffic(6, n, hw).in_node_s == Approx(folded + halving).epsilon(1e-12));
}

TEST_CASE("Rabenseifner on 3 ranks, one a node: the fold crosses too, five messages across, 3N in all") {
  // Ranks 0 | 1 | 2: 0 and 1 swap halves (N/2), 1 sends its sum (N/2); vranks 0 1 = ranks 0 2
  // halve and gather (N/2 each way); 0 sends 1 the whole result (N).
  const Hardware hw = two_level(1, 3);
  const Traffic t = rabenseifner_traffic(3, 1e6, hw);
  CHECK(t.in_node_s == 0);
  CHECK(t.cross_steps == 5);
  CHECK(t.cross_bytes == Approx(3e6).epsilon(1e-12));
}

TEST_CASE("Rabenseifner on 3 nodes of 2: the folded ranks renumbered, pairs cross as Open MPI's vranks place them") {
  // Ranks 0 1 | 2 3 | 4 5. Pairs (0,1) and (2,3) fold inside their nodes; the four left
  // are vranks 0 1 2 3 = ranks 0 2 4 5. Distance 1: (0,2) crosses (one sender a node), (4,5)
  // does not. Distance 2: (0,4) and (2,5) cross, and node 2's two ranks send at once.
  const Hardware hw = two_level(2, 3);
  const LinkCost intra = link_cost(hw.intra_node);
  const double n = 1e6;
  const Traffic t = rabenseifner_traffic(6, n, hw);
  CHECK(t.in_node_s == Approx(2 * (intra.alpha + n / 2 * intra.beta) + (intra.alpha + n * intra.beta)).epsilon(1e-12));
  CHECK(t.cross_steps == 4);
  CHECK(t.cross_bytes == Approx(2 * (n / 2 * 1) + 2 * (n / 4 * 2)).epsilon(1e-12));
}

TEST_CASE("Rabenseifner on 3 nodes of 4: distance 1 stays inside, 2 and 4 cross with 2 and 4 senders") {
  // Ranks 0-3 | 4-7 | 8-11; pairs (0,1) (2,3) (4,5) (6,7) fold; vranks 0-7 = ranks 0 2 4 6
  // 8 9 10 11. Distance 1: (0,2) (4,6) (8,9) (10,11), all inside. Distance 2: (0,4) (2,6)
  // cross, (8,10) (9,11) do not. Distance 4: every pair crosses, node 2 sends four.
  const Hardware hw = two_level(4, 3);
  const LinkCost intra = link_cost(hw.intra_node);
  const double n = 1e6;
  const Traffic t = rabenseifner_traffic(12, n, hw);
  const double fold = 2 * (intra.alpha + n / 2 * intra.beta) + (intra.alpha + n * intra.beta);
  CHECK(t.in_node_s == Approx(fold + 2 * (intra.alpha + n / 2 * intra.beta)).epsilon(1e-12));
  CHECK(t.cross_steps == 4);
  CHECK(t.cross_bytes == Approx(2 * (n / 4 * 2) + 2 * (n / 8 * 4)).epsilon(1e-12));
}

TEST_CASE("Open MPI 4.1's fixed choice for a commutative MPI_Allreduce") {
  using enum OpenMpiAllreduce;
  // Spot checks against coll_tuned_decision_fixed.c (v4.1.4), at and beside its bounds.
  const struct {
    int ranks;
    double bytes;
    OpenMpiAllreduce expected;
  } cases[] = {
      {2, 4, ring},
      {2, 1024, recursive_doubling},
      {3, 100000, segmented_ring},
      {2, 262144, rabenseifner},
      {4, 8191, recursive_doubling},
      {4, 8192, rabenseifner},
      {4, 249e3, rabenseifner},
      {100, 200000, recursive_doubling},
      {8, 8191, recursive_doubling},
      {15, 8192, rabenseifner},
      {16, 4095, recursive_doubling},
      {31, 4096, rabenseifner},
      {32, 100, segmented_ring},
      {63, 128, rabenseifner},
      {200, 100000, reduce_then_broadcast},
      {256, 4095, reduce_then_broadcast},
      {511, 4096, rabenseifner},
      {2048, 2047, reduce_then_broadcast},
      {4095, 3000, segmented_ring},
      {4095, 16384, rabenseifner},
      {1000, 10000, recursive_doubling},
      {5000, 20000, recursive_doubling},
      {5000, 40000, rabenseifner},
  };
  for (const auto& c : cases) {
    INFO(c.ranks << " ranks, " << c.bytes << " bytes");
    CHECK(open_mpi_allreduce_choice(c.ranks, c.bytes) == c.expected);
  }
}

TEST_CASE("kolo's MPI backend: its ring from 64 KiB a rank, MPI_Allreduce below, piece by piece") {
  const Hardware hw = two_level(2, 2);
  const double threshold = kMpiRingMinBytesPerRank * 4;  // 256 KiB at np 4
  auto same = [](const Traffic& a, const Traffic& b) {
    CHECK(a.in_node_s == Approx(b.in_node_s).epsilon(1e-12).margin(1e-18));
    CHECK(a.cross_steps == Approx(b.cross_steps).epsilon(1e-12).margin(0));
    CHECK(a.cross_bytes == Approx(b.cross_bytes).epsilon(1e-12).margin(0));
  };
  // The MNIST net's 249 KB at np 4 is 62 KB a rank: Open MPI's Rabenseifner.
  same(mpi_backend_traffic(4, 249e3, 1 << 20, hw), rabenseifner_traffic(4, 249e3, hw));
  same(mpi_backend_traffic(4, threshold, 1 << 20, hw), flat_traffic(FlatAlgorithm::ring, 4, threshold, hw));
  // 2.5 pieces of 1 MiB: two rings of a piece and one of half a piece.
  Traffic expected = 2.0 * flat_traffic(FlatAlgorithm::ring, 4, 1 << 20, hw);
  expected += flat_traffic(FlatAlgorithm::ring, 4, (1 << 20) / 2, hw);
  same(mpi_backend_traffic(4, 2.5 * (1 << 20), 1 << 20, hw), expected);
  // A remainder below the threshold goes to MPI_Allreduce: 4000 bytes, recursive doubling.
  expected = flat_traffic(FlatAlgorithm::ring, 4, 1 << 20, hw);
  expected += flat_traffic(FlatAlgorithm::recursive_doubling, 4, 4000, hw);
  same(mpi_backend_traffic(4, (1 << 20) + 4000, 1 << 20, hw), expected);
  same(mpi_backend_traffic(1, 1e6, 1 << 20, hw), Traffic{});
  CHECK_THROWS_AS(mpi_backend_traffic(4, 1e6, 0, hw), std::invalid_argument);
}

TEST_CASE("the candidates: nccl's ring and recursive doubling, mpi's one") {
  Hardware hw = two_level(2, 2);
  CHECK(allreduce_candidates(4, 249e3, 1 << 20, hw).size() == 2);
  hw.collectives = Collectives::mpi;
  const std::vector<Traffic> mpi = allreduce_candidates(4, 249e3, 1 << 20, hw);
  REQUIRE(mpi.size() == 1);
  CHECK(mpi[0].cross_bytes == Approx(249e3));
}

TEST_CASE("a collective on no ranks is refused") {
  CHECK_THROWS_AS(ring_allreduce(0, 1, kLink), std::invalid_argument);
  CHECK_THROWS_AS(hierarchical_allreduce(4, 0, 1, kLink, kLink), std::invalid_argument);
}
