// The CPU-side arithmetic of the hierarchical allreduce: forced node layouts, how a
// tensor is split into per-rank slices and a tail, and the sequence of in-node and
// cross-node collectives it makes (with recording fakes; the values are checked against
// a flat allreduce by the multi-rank tests).
#include <catch2/catch.hpp>

#include <numeric>

#include "ops/device.h"
#include "ops/hierarchical_backend.h"
#include "ops/node_layout.h"
#include "support/fake_devices.h"

using Catch::Matchers::Contains;
using kolo::ops::NodeLayout;
using kolo::ops::SliceLayout;

TEST_CASE("a forced layout groups consecutive ranks into nodes", "[hierarchical]") {
  // 2 "nodes" of 2 ranks: ranks 0,1 | 2,3.
  CHECK(kolo::ops::forced_node_layout(0, 4, 2) == NodeLayout{0, 2, 0, 2});
  CHECK(kolo::ops::forced_node_layout(1, 4, 2) == NodeLayout{1, 2, 0, 2});
  CHECK(kolo::ops::forced_node_layout(2, 4, 2) == NodeLayout{0, 2, 1, 2});
  CHECK(kolo::ops::forced_node_layout(3, 4, 2) == NodeLayout{1, 2, 1, 2});
  CHECK(kolo::ops::forced_node_layout(5, 6, 3) == NodeLayout{2, 3, 1, 2});
  CHECK(kolo::ops::forced_node_layout(0, 1, 1) == NodeLayout{0, 1, 0, 1});
}

TEST_CASE("a forced layout that does not divide the ranks is an error naming the variable", "[hierarchical]") {
  CHECK_THROWS_WITH(kolo::ops::forced_node_layout(0, 4, 3), Contains("KOLO_TEST_LOCAL_SIZE=3") && Contains("4 ranks"));
  CHECK_THROWS_AS(kolo::ops::forced_node_layout(0, 4, 0), kolo::Error);
}

TEST_CASE("slices are equal per local rank, and the rest is a tail shorter than a node", "[hierarchical]") {
  CHECK(kolo::ops::slice_layout(10, 4) == SliceLayout{2, 2});
  CHECK(kolo::ops::slice_layout(12, 4) == SliceLayout{3, 0});
  CHECK(kolo::ops::slice_layout(3, 4) == SliceLayout{0, 3});
  CHECK(kolo::ops::slice_layout(0, 4) == SliceLayout{0, 0});
  CHECK(kolo::ops::slice_layout(7, 1) == SliceLayout{7, 0});
  const SliceLayout s = kolo::ops::slice_layout(10, 4);
  CHECK(s.slice_offset(3) == 6);
  CHECK(s.tail_offset(4) == 8);
  for (int64_t count = 0; count < 200; ++count)
    for (int local = 1; local <= 8; ++local) {
      const SliceLayout l = kolo::ops::slice_layout(count, local);
      REQUIRE(l.per_rank * local + l.tail == count);
      REQUIRE(l.tail < local);
    }
  CHECK_THROWS_AS(kolo::ops::slice_layout(10, 0), kolo::Error);
}

namespace {

struct Hierarchy {
  std::vector<std::string> log;
  std::unique_ptr<kolo::ops::DeviceOps> memory = kolo::ops::make_cpu_ops();
  std::unique_ptr<kolo::ops::Backend> backend;

  Hierarchy(int local_rank, int local_size) {
    kolo::ops::HierarchicalParts p;
    p.local = std::make_unique<kolo::testing::RecordingBackend>("local", log, 2.0);
    p.cross = std::make_unique<kolo::testing::RecordingBackend>("cross", log, 3.0);
    p.flat = std::make_unique<kolo::testing::RecordingBackend>("flat", log, 1.0);
    p.memory = memory.get();
    p.local_rank = local_rank;
    p.local_size = local_size;
    backend = kolo::ops::make_hierarchical_backend(std::move(p));
  }
};

}  // namespace

TEST_CASE("hierarchical allreduce: reduce-scatter in the node, allreduce across, allgather in the node",
          "[hierarchical]") {
  Hierarchy h(/*local_rank=*/0, /*local_size=*/4);
  std::vector<float> data(10);
  std::iota(data.begin(), data.end(), 1.0f);
  h.backend->allreduce(data.data(), data.data(), 10, kolo::DType::Float32, kolo::ReduceOp::Sum);
  const std::vector<std::string> expected = {
      "local.reducescatter [2,2,2,2]",  // 2 elements per local rank
      "local.allreduce 2",              // the 2-element tail, reduced whole in the node
      "cross.allreduce 4",              // this rank's slice and the tail, across nodes
      "local.allgatherv [2,2,2,2]"};
  CHECK(h.log == expected);
  // The fakes act as one rank: in-node steps double, the cross step triples. This rank's
  // slice (elements 0, 1) and the tail (8, 9) went through both.
  CHECK(data[0] == 6.0f * 1);
  CHECK(data[1] == 6.0f * 2);
  CHECK(data[8] == 6.0f * 9);
  CHECK(data[9] == 6.0f * 10);
}

TEST_CASE("hierarchical allreduce of a tensor smaller than the node has only a tail", "[hierarchical]") {
  Hierarchy h(1, 4);
  std::vector<float> in = {1, 2, 3}, out(3);
  h.backend->allreduce(in.data(), out.data(), 3, kolo::DType::Float32, kolo::ReduceOp::Sum);
  CHECK(h.log == std::vector<std::string>{"local.allreduce 3", "cross.allreduce 3"});
  CHECK(out == std::vector<float>{6, 12, 18});
}

TEST_CASE("the hierarchical backend sends every other collective to the flat backend", "[hierarchical]") {
  Hierarchy h(0, 2);
  std::vector<float> a = {1, 2}, b(2);
  const std::vector<int64_t> counts = {2};
  h.backend->allgatherv(a.data(), b.data(), counts, kolo::DType::Float32);
  h.backend->broadcast(a.data(), 2, kolo::DType::Float32, 0);
  h.backend->alltoallv(a.data(), counts, b.data(), counts, kolo::DType::Float32);
  h.backend->reducescatter(a.data(), b.data(), counts, kolo::DType::Float32, kolo::ReduceOp::Sum);
  h.backend->barrier();
  h.backend->set_allreduce_chunk_bytes(4096);
  CHECK(h.log == std::vector<std::string>{"flat.allgatherv [2]", "flat.broadcast 2 from 0", "flat.alltoallv [2]",
                                          "flat.reducescatter [2]", "flat.barrier", "local.chunk 4096",
                                          "cross.chunk 4096", "flat.chunk 4096"});
}
