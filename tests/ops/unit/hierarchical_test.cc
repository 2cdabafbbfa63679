// The CPU-side arithmetic of the hierarchical collectives: forced node layouts, how a
// tensor is split into per-rank slices and a tail, the sequence of in-node and
// cross-node collectives the allreduce makes (with recording fakes; the values are checked
// against a flat allreduce by the multi-rank tests), where an allgather's parts go, and
// the allgather itself on real data with ranks as threads.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <thread>

#include "ops/device.h"
#include "ops/hierarchical_backend.h"
#include "ops/node_layout.h"
#include "support/fake_devices.h"
#include "support/status.h"
#include "support/thread_group.h"

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

  Hierarchy(int local_rank, int local_size, kolo::ops::HierarchicalRoutes routes = {.allreduce = true}) {
    kolo::ops::HierarchicalParts p;
    p.local = std::make_unique<kolo::testing::RecordingBackend>("local", log, 2.0);
    p.cross = std::make_unique<kolo::testing::RecordingBackend>("cross", log, 3.0);
    p.flat = std::make_unique<kolo::testing::RecordingBackend>("flat", log, 1.0);
    p.memory = memory.get();
    p.placement.local_rank = local_rank;
    p.placement.local_size = local_size;
    p.routes = routes;
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

TEST_CASE("hierarchical allreduce scales once, in the cross-node step, slices and tail alike",
          "[hierarchical][scaling]") {
  Hierarchy h(/*local_rank=*/0, /*local_size=*/4);
  std::vector<float> data(10);
  std::iota(data.begin(), data.end(), 1.0f);
  h.backend->allreduce(data.data(), data.data(), 10, kolo::DType::Float32, kolo::ReduceOp::Sum, 0.25);
  // Only this rank's share of the result is scaled (1/4 of it, here), then spread by the
  // allgather: the in-node steps carry no scale.
  const std::vector<std::string> expected = {"local.reducescatter [2,2,2,2]", "local.allreduce 2",
                                             "cross.allreduce 4 x0.25", "local.allgatherv [2,2,2,2]"};
  CHECK(h.log == expected);
  for (int i : {0, 1, 8, 9}) {
    INFO("element " << i);
    CHECK(data[i] == 6.0f * float(i + 1) * 0.25f);
  }

  Hierarchy tail_only(1, 4);
  std::vector<float> in = {1, 2, 3}, out(3);
  tail_only.backend->allreduce(in.data(), out.data(), 3, kolo::DType::Float32, kolo::ReduceOp::Max, -0.5);
  CHECK(tail_only.log == std::vector<std::string>{"local.allreduce 3", "cross.allreduce 3 x-0.5"});
  CHECK(out == std::vector<float>{-3, -6, -9});
}

TEST_CASE("the hierarchical backend passes the scale on where the flat backend runs", "[hierarchical][scaling]") {
  Hierarchy h(0, 2, {.allreduce = false, .allgather = false});
  std::vector<float> a = {1, 2}, b(2);
  const std::vector<int64_t> counts = {2};
  h.backend->allreduce(a.data(), b.data(), 2, kolo::DType::Float32, kolo::ReduceOp::Sum, 0.5);
  CHECK(b == std::vector<float>{0.5f, 1.0f});  // the flat fake's "sum" is the input itself
  h.backend->reducescatter(a.data(), b.data(), counts, kolo::DType::Float32, kolo::ReduceOp::Sum, 3.0);
  CHECK(b == std::vector<float>{3.0f, 6.0f});
  CHECK(h.log == std::vector<std::string>{"flat.allreduce 2 x0.5", "flat.reducescatter [2] x3"});
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

TEST_CASE("a collective whose route is off goes to the flat backend", "[hierarchical]") {
  Hierarchy h(0, 2, {.allreduce = false, .allgather = false});
  std::vector<float> a = {1, 2}, b(2);
  const std::vector<int64_t> counts = {2};
  h.backend->allreduce(a.data(), b.data(), 2, kolo::DType::Float32, kolo::ReduceOp::Sum);
  h.backend->allgatherv(a.data(), b.data(), counts, kolo::DType::Float32);
  CHECK(h.log == std::vector<std::string>{"flat.allreduce 2", "flat.allgatherv [2]"});
  CHECK_THAT(h.backend->name(), Contains("hierarchical nothing"));
  CHECK_THAT(Hierarchy(0, 2, {.allreduce = true, .allgather = false}).backend->name(),
             Contains("hierarchical allreduce ("));
}

TEST_CASE("the hierarchical allgather needs the node of every rank", "[hierarchical]") {
  kolo::ops::HierarchicalParts p;
  std::vector<std::string> log;
  auto memory = kolo::ops::make_cpu_ops();
  p.local = std::make_unique<kolo::testing::RecordingBackend>("local", log);
  p.cross = std::make_unique<kolo::testing::RecordingBackend>("cross", log);
  p.flat = std::make_unique<kolo::testing::RecordingBackend>("flat", log);
  p.memory = memory.get();
  p.routes.allgather = true;
  CHECK_THROWS_MATCHES(kolo::ops::make_hierarchical_backend(std::move(p)), kolo::Error,
                       kolo_test::HasCode(kolo::StatusCode::Internal, "node of every rank"));
}

TEST_CASE("nodes are numbered in the order of their lowest ranks", "[hierarchical]") {
  using V = std::vector<int>;
  CHECK(kolo::ops::nodes_by_leader(V{0, 0, 2, 2}) == V{0, 0, 1, 1});
  CHECK(kolo::ops::nodes_by_leader(V{0, 1, 0, 1}) == V{0, 1, 0, 1});  // round-robin placement
  CHECK(kolo::ops::nodes_by_leader(V{0, 1, 1, 0, 4}) == V{0, 1, 1, 0, 2});
  CHECK(kolo::ops::nodes_by_leader(V{0, 0, 0}) == V{0, 0, 0});
  CHECK(kolo::ops::nodes_by_leader(V{}).empty());
}

namespace {

kolo::ops::NodePlacement placement(int rank, std::vector<int> node_of_rank) {
  kolo::ops::NodePlacement p;
  p.rank = rank;
  p.local_size = 0;
  const int node = node_of_rank[static_cast<std::size_t>(rank)];
  for (int r = 0; r < static_cast<int>(node_of_rank.size()); ++r) {
    if (node_of_rank[static_cast<std::size_t>(r)] != node) continue;
    if (r < rank) ++p.local_rank;
    ++p.local_size;
  }
  p.node_of_rank = std::move(node_of_rank);
  return p;
}

using Move = kolo::ops::NodeGatherPlan::Move;

}  // namespace

TEST_CASE("an allgather on nodes of consecutive ranks is planned straight into the output", "[hierarchical]") {
  // Nodes {0, 1} and {2, 3}; rank 1 gives nothing.
  const std::vector<int64_t> counts = {1, 0, 3, 2};
  const kolo::ops::NodeGatherPlan plan = kolo::ops::plan_node_gather(counts, placement(2, {0, 0, 1, 1}));
  CHECK(plan.local_counts == std::vector<int64_t>{3, 2});
  CHECK(plan.node_counts == std::vector<int64_t>{1, 5});
  CHECK(plan.node_offset == 1);
  CHECK(plan.node_count == 5);
  CHECK(plan.total == 6);
  CHECK(plan.in_rank_order);
  CHECK(plan.moves.empty());
}

TEST_CASE("an allgather on interleaved nodes moves every part from node order to rank order", "[hierarchical]") {
  // Round-robin placement: node 0 holds ranks 0 and 2, node 1 ranks 1 and 3. In node
  // order the parts are r0 (1), r2 (3) | r1 (2), r3 (4).
  const std::vector<int64_t> counts = {1, 2, 3, 4};
  const kolo::ops::NodeGatherPlan plan = kolo::ops::plan_node_gather(counts, placement(1, {0, 1, 0, 1}));
  CHECK(plan.local_counts == std::vector<int64_t>{2, 4});
  CHECK(plan.node_counts == std::vector<int64_t>{4, 6});
  CHECK(plan.node_offset == 4);
  CHECK(plan.node_count == 6);
  CHECK(plan.total == 10);
  CHECK_FALSE(plan.in_rank_order);
  CHECK(plan.moves == std::vector<Move>{{0, 0, 1}, {4, 1, 2}, {1, 3, 3}, {6, 6, 4}});

  // Empty parts are not moved; a layout whose non-empty parts happen to be in place is.
  const kolo::ops::NodeGatherPlan sparse = kolo::ops::plan_node_gather(std::vector<int64_t>{0, 5, 0, 0},
                                                                       placement(0, {0, 1, 0, 1}));
  CHECK(sparse.in_rank_order);
  CHECK(sparse.node_counts == std::vector<int64_t>{0, 5});
  CHECK(sparse.node_count == 0);
}

TEST_CASE("an allgather plan refuses counts for another number of ranks", "[hierarchical]") {
  CHECK_THROWS_MATCHES(kolo::ops::plan_node_gather(std::vector<int64_t>{1, 2, 3}, placement(0, {0, 0, 1, 1})),
                       kolo::Error, kolo_test::HasCode(kolo::StatusCode::Internal, "3 counts for 4 ranks"));
}

TEST_CASE("an allgather plan beyond an int of elements is Unsupported on every rank", "[hierarchical]") {
  const int64_t half = int64_t{1} << 30;  // two of them are one more than INT_MAX
  CHECK_THROWS_MATCHES(kolo::ops::plan_node_gather(std::vector<int64_t>{half, half}, placement(1, {0, 1})),
                       kolo::Error, kolo_test::HasCode(kolo::StatusCode::Unsupported, "2147483648 elements"));
  CHECK_NOTHROW(kolo::ops::plan_node_gather(std::vector<int64_t>{half, half - 1}, placement(1, {0, 1})));
}

namespace {

// A part's bytes say whose they are and where they were: rank r's k-th byte.
std::byte part_byte(int r, int64_t k) { return static_cast<std::byte>(1 + r * 50 + k % 47); }

struct GatherRun {
  std::vector<std::vector<std::byte>> outputs;  // per rank
  std::vector<std::vector<std::string>> flat_logs;
  std::vector<std::string> mismatches;
  int leader_cross_calls = 0, other_cross_calls = 0;
};

// One hierarchical allgather on every rank of `node_of_rank`, each rank on its own thread,
// over in-process groups: one per node, and one cross-node group per local rank (the ranks
// with that local rank, by rank), as MpiContext splits them.
GatherRun gather_on_threads(const std::vector<int>& node_of_rank, const std::vector<int64_t>& counts,
                            kolo::DType dtype, bool in_place) {
  const int size = static_cast<int>(node_of_rank.size());
  const int nodes = *std::max_element(node_of_rank.begin(), node_of_rank.end()) + 1;
  std::vector<kolo::ops::NodePlacement> where;
  std::vector<std::vector<int>> node_members(nodes), cross_members;
  for (int r = 0; r < size; ++r) {
    where.push_back(placement(r, node_of_rank));
    node_members[static_cast<std::size_t>(node_of_rank[r])].push_back(r);
    const auto local = static_cast<std::size_t>(where.back().local_rank);
    if (cross_members.size() <= local) cross_members.resize(local + 1);
    cross_members[local].push_back(r);
  }
  std::vector<std::unique_ptr<kolo::testing::ThreadGroup>> node_groups, cross_groups;
  for (const auto& m : node_members) node_groups.push_back(std::make_unique<kolo::testing::ThreadGroup>(int(m.size())));
  for (const auto& m : cross_members) cross_groups.push_back(std::make_unique<kolo::testing::ThreadGroup>(int(m.size())));

  const std::size_t element = kolo::dtype_size(dtype);
  const int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t{0});
  GatherRun run;
  run.outputs.assign(size, std::vector<std::byte>(static_cast<std::size_t>(total) * element, std::byte{0xEE}));
  run.flat_logs.resize(size);
  std::vector<std::vector<std::byte>> inputs(size);
  std::vector<std::unique_ptr<kolo::ops::DeviceOps>> memory;
  std::vector<std::unique_ptr<kolo::ops::Backend>> backends;
  std::vector<const void*> input_of(size);
  int64_t offset = 0;
  for (int r = 0; r < size; ++r) {
    const auto rr = static_cast<std::size_t>(r);
    for (int64_t k = 0; k < counts[rr] * int64_t(element); ++k) inputs[rr].push_back(part_byte(r, k));
    std::byte* place = run.outputs[rr].data() + offset * int64_t(element);
    if (in_place && !inputs[rr].empty()) std::memcpy(place, inputs[rr].data(), inputs[rr].size());
    input_of[rr] = in_place ? static_cast<const void*>(place) : inputs[rr].data();
    offset += counts[rr];

    const int local = where[rr].local_rank;
    const auto& cross = cross_members[static_cast<std::size_t>(local)];
    kolo::ops::HierarchicalParts p;
    p.local = node_groups[static_cast<std::size_t>(node_of_rank[rr])]->member(local);
    p.cross = cross_groups[static_cast<std::size_t>(local)]->member(
        int(std::find(cross.begin(), cross.end(), r) - cross.begin()));
    p.flat = std::make_unique<kolo::testing::RecordingBackend>("flat", run.flat_logs[rr]);
    memory.push_back(kolo::ops::make_cpu_ops());
    p.memory = memory.back().get();
    p.placement = where[rr];
    p.routes.allgather = true;
    backends.push_back(kolo::ops::make_hierarchical_backend(std::move(p)));
  }

  std::vector<std::string> errors(size);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r)
    threads.emplace_back([&, r] {
      try {
        backends[r]->allgatherv(input_of[r], run.outputs[r].data(), counts, dtype);
      } catch (const std::exception& e) {
        errors[r] = e.what();  // the other ranks may now wait forever: the test's timeout ends it
      }
    });
  for (std::thread& t : threads) t.join();
  for (const std::string& e : errors)
    if (!e.empty()) run.mismatches.push_back(e);
  for (auto* groups : {&node_groups, &cross_groups})
    for (const auto& g : *groups)
      for (const std::string& m : g->mismatches()) run.mismatches.push_back(m);
  run.leader_cross_calls = cross_groups[0]->calls();
  for (std::size_t i = 1; i < cross_groups.size(); ++i) run.other_cross_calls += cross_groups[i]->calls();
  return run;
}

}  // namespace

TEST_CASE("hierarchical allgather gives every rank every part in rank order, on any node layout",
          "[hierarchical]") {
  const std::vector<std::vector<int>> layouts = {
      {0, 0, 1, 1},        // 2 nodes of 2 consecutive ranks
      {0, 0, 1, 1, 2, 2},  // 3 nodes of 2
      {0, 1, 0, 1},        // round-robin placement: nodes {0, 2} and {1, 3}
      {0, 1, 1, 0, 2},     // scattered, and nodes of 2, 2 and 1 ranks
      {0, 0, 0},           // one node
      {0, 1, 2},           // one rank per node
      {0}};
  for (const std::vector<int>& layout : layouts) {
    const int size = static_cast<int>(layout.size());
    std::vector<std::vector<int64_t>> count_sets = {
        std::vector<int64_t>(size, 0),  // nothing at all
        std::vector<int64_t>(size, 3)};
    std::vector<int64_t> uneven(size), last_only(size, 0);
    for (int r = 0; r < size; ++r) uneven[r] = (r * 5 + 2) % 4;  // 2, 3, 0, 1, 2, ...: zeros among them
    last_only.back() = 1001;
    count_sets.push_back(uneven);
    count_sets.push_back(last_only);
    for (const std::vector<int64_t>& counts : count_sets)
      for (kolo::DType dtype : {kolo::DType::UInt8, kolo::DType::Float16, kolo::DType::Int64})
        for (bool in_place : {false, true}) {
          INFO("layout " << kolo::testing::RecordingBackend::counts_string(std::vector<int64_t>(layout.begin(), layout.end()))
                         << " counts " << kolo::testing::RecordingBackend::counts_string(counts) << " "
                         << kolo::dtype_name(dtype) << (in_place ? " in place" : ""));
          const GatherRun run = gather_on_threads(layout, counts, dtype, in_place);
          CHECK(run.mismatches.empty());
          std::vector<std::byte> expected;  // the parts, concatenated in rank order
          for (int r = 0; r < size; ++r)
            for (int64_t k = 0; k < counts[r] * int64_t(kolo::dtype_size(dtype)); ++k) expected.push_back(part_byte(r, k));
          for (int r = 0; r < size; ++r) {
            INFO("rank " << r);
            REQUIRE(run.outputs[r] == expected);
            CHECK(run.flat_logs[r].empty());  // never the flat allgather
          }
          CHECK(run.other_cross_calls == 0);  // only local rank 0 crosses nodes
          const bool anything = std::accumulate(counts.begin(), counts.end(), int64_t{0}) > 0;
          const int nodes = *std::max_element(layout.begin(), layout.end()) + 1;
          CHECK(run.leader_cross_calls == (anything ? nodes : 0));  // one call per node leader
        }
  }
}
