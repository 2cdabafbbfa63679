// The collectives' costs equal their closed forms, computed here independently.
#include <catch2/catch.hpp>

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

TEST_CASE("a collective on no ranks is refused") {
  CHECK_THROWS_AS(ring_allreduce(0, 1, kLink), std::invalid_argument);
  CHECK_THROWS_AS(hierarchical_allreduce(4, 0, 1, kLink, kLink), std::invalid_argument);
}
