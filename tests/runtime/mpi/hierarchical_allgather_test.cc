// The hierarchical allgather over real MPI with host memory: the backend on a forced node
// layout (2 "nodes" of 2 ranks at np 4) and on nodes of interleaved ranks (as mpirun
// --map-by node places them), against the parts concatenated in rank order; and, through
// the runtime, which MPI calls an allgather makes (mpi_call_log.h): the route
// KOLO_HIERARCHICAL_ALLGATHER asks for, nothing else.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "mpi_call_log.h"
#include "ops/device.h"
#include "ops/hierarchical_backend.h"
#include "ops/mpi_backend.h"
#include "support/mpi_util.h"

using kolo::DType;
using namespace kolo_test;

namespace {

// Rank q's part: small integers, exact in every dtype, that say whose part it is.
double value(int q, int64_t i) { return double((q * 29 + i) % 100); }

Buffer part(DType d, int64_t count, int q) {
  Buffer b(d, {count});
  for (int64_t i = 0; i < count; ++i) b.set(i, value(q, i));
  return b;
}

// Every rank's part, in rank order: what an allgather must give every rank.
Buffer concatenation(DType d, const std::vector<int64_t>& counts) {
  Buffer all(d, {std::accumulate(counts.begin(), counts.end(), int64_t{0})});
  int64_t at = 0;
  for (int q = 0; q < static_cast<int>(counts.size()); ++q)
    for (int64_t i = 0; i < counts[q]; ++i) all.set(at++, value(q, i));
  return all;
}

// Uneven parts, with empty ones among them (2, 3, 0, 1, ... times `scale`), all empty, equal.
std::vector<std::vector<int64_t>> count_patterns(int n) {
  std::vector<std::vector<int64_t>> patterns;
  for (int64_t scale : {1, 1000}) {
    std::vector<int64_t> uneven(n);
    for (int q = 0; q < n; ++q) uneven[q] = ((q * 5 + 2) % 4) * scale;
    patterns.push_back(uneven);
  }
  patterns.push_back(std::vector<int64_t>(n, 0));
  patterns.push_back(std::vector<int64_t>(n, 7));
  return patterns;
}

void require_gathers_in_rank_order(kolo::ops::Backend& backend) {
  const int n = size(), r = rank();
  for (DType d : all_dtypes())
    for (const std::vector<int64_t>& counts : count_patterns(n)) {
      INFO(kolo::dtype_name(d) << " counts " << counts[0] << ", ... (rank " << r << ")");
      const Buffer expected = concatenation(d, counts);
      Buffer mine = part(d, counts[r], r), out(d, {expected.count()});
      backend.allgatherv(mine.data(), out.data(), counts, d);
      REQUIRE(out.bytes() == expected.bytes());

      // In place: this rank's part already at its place in the output, the rest garbage.
      Buffer in_place(d, {expected.count()});
      for (int64_t i = 0; i < expected.count(); ++i) in_place.set(i, 99);
      const int64_t before = std::accumulate(counts.begin(), counts.begin() + r, int64_t{0});
      for (int64_t i = 0; i < counts[r]; ++i) in_place.set(before + i, value(r, i));
      std::byte* place = static_cast<std::byte*>(in_place.data()) + before * int64_t(element_size(d));
      backend.allgatherv(expected.count() == 0 ? nullptr : place, in_place.data(), counts, d);
      REQUIRE(in_place.bytes() == expected.bytes());
    }
}

kolo::ops::HierarchicalParts allgather_parts(MPI_Comm comm, MPI_Comm local, MPI_Comm cross,
                                             kolo::ops::NodePlacement placement, kolo::ops::DeviceOps& memory) {
  kolo::ops::HierarchicalParts parts;
  parts.local = kolo::ops::make_mpi_backend(local, {});
  parts.cross = kolo::ops::make_mpi_backend(cross, {});
  parts.flat = kolo::ops::make_mpi_backend(comm, {});
  parts.memory = &memory;
  parts.placement = std::move(placement);
  parts.routes.allgather = true;
  return parts;
}

int forced_local_size(int n) { return n % 2 == 0 ? 2 : n; }

}  // namespace

TEST_CASE("hierarchical allgather on a forced node layout gives every part in rank order", "[hierarchical]") {
  const int local = forced_local_size(size());
  kolo::ops::MpiContext context(MPI_COMM_WORLD, {local});
  const kolo::ops::NodePlacement placement = context.placement();
  REQUIRE(placement.node_of_rank.size() == std::size_t(size()));
  for (int q = 0; q < size(); ++q) CHECK(placement.node_of_rank[q] == q / local);
  auto host = kolo::ops::make_cpu_ops();
  auto backend = kolo::ops::make_hierarchical_backend(
      allgather_parts(context.comm(), context.local_comm(), context.cross_comm(), placement, *host));
  require_gathers_in_rank_order(*backend);
}

TEST_CASE("hierarchical allgather on nodes of interleaved ranks gives every part in rank order", "[hierarchical]") {
  // Round-robin placement: node 0 holds the even ranks, node 1 the odd ones (at np 3,
  // nodes of 2 and 1 ranks). Split as MpiContext splits: keyed by rank.
  const int nodes = std::min(size(), 2), r = rank();
  MPI_Comm comm, local, cross;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_split(comm, r % nodes, r, &local);
  int local_rank = 0, local_size = 0;
  MPI_Comm_rank(local, &local_rank);
  MPI_Comm_size(local, &local_size);
  MPI_Comm_split(comm, local_rank, r, &cross);

  kolo::ops::NodePlacement placement{r, local_rank, local_size, kolo::ops::node_of_every_rank(comm, local)};
  REQUIRE(placement.node_of_rank.size() == std::size_t(size()));
  for (int q = 0; q < size(); ++q) CHECK(placement.node_of_rank[q] == q % nodes);
  auto host = kolo::ops::make_cpu_ops();
  auto backend = kolo::ops::make_hierarchical_backend(allgather_parts(comm, local, cross, placement, *host));
  require_gathers_in_rank_order(*backend);

  backend.reset();
  for (MPI_Comm* c : {&cross, &local, &comm}) MPI_Comm_free(c);
}

namespace {

std::vector<int> ranks_from(int first, int count, int step = 1) {
  std::vector<int> ranks;
  for (int i = 0; i < count; ++i) ranks.push_back(first + i * step);
  return ranks;
}

}  // namespace

TEST_CASE("allgather takes the route the configuration asks for, and gives every part in rank order",
          "[allgather][hierarchical]") {
  const std::string config = kolo::describe_configuration();
  const bool hierarchical = config.find("KOLO_HIERARCHICAL_ALLGATHER = 1") != std::string::npos;
  INFO(config);
  const int n = size(), r = rank();
  // Rank q gives (2q + 1) % 3 rows of 3: 1, 0, 2, 1, ...
  std::vector<int64_t> counts(n);
  for (int q = 0; q < n; ++q) counts[q] = ((2 * q + 1) % 3) * 3;
  Buffer mine = part(DType::Float32, counts[r], r);
  std::vector<MpiCall> calls;
  kolo::Handle h;
  {
    MpiCallLog log;
    h = kolo::allgather_async("route/allgather", kolo::TensorView{mine.data(), DType::Float32,
                                                                  {counts[r] / 3, 3}, kolo::Device::cpu()});
    require_ok(h, "allgather");
    calls = log.calls();
  }
  const Buffer expected = concatenation(DType::Float32, counts);
  const int64_t rows = expected.count() / 3;
  REQUIRE(h.output().shape == std::vector<int64_t>{rows, 3});
  CHECK(std::memcmp(h.output().data, expected.bytes().data(), expected.bytes().size()) == 0);

  std::vector<std::vector<int>> gathers, broadcasts;  // the ranks each call ran over
  for (const MpiCall& c : calls) (c.function == "MPI_Allgatherv" ? gathers : broadcasts).push_back(c.world_ranks);
  const std::vector<int> everyone = ranks_from(0, n);
  if (!hierarchical) {
    CHECK(gathers == std::vector<std::vector<int>>{everyone});
    CHECK(broadcasts.empty());
    return;
  }
  // The node layout is KOLO_TEST_LOCAL_SIZE's: consecutive ranks.
  REQUIRE(std::getenv("KOLO_TEST_LOCAL_SIZE") != nullptr);
  const int local_size = kolo::local_size(), local_rank = kolo::local_rank();
  const std::vector<int> node = ranks_from(r - local_rank, local_size);
  const std::vector<int> leaders = ranks_from(0, n / local_size, local_size);
  std::vector<std::vector<int>> expected_gathers = {node};  // 1. in the node
  if (local_rank == 0) expected_gathers.push_back(leaders);  // 2. across nodes, local rank 0 only
  CHECK(gathers == expected_gathers);
  // 3. The other nodes' rows, from local rank 0 to the rest of the node.
  CHECK_FALSE(broadcasts.empty());
  for (const std::vector<int>& b : broadcasts) CHECK(b == node);
}
