#include "hierarchical_backend.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "kolo/check.h"

namespace kolo::ops {

SliceLayout slice_layout(int64_t count, int local_size) {
  KOLO_CHECK(local_size > 0, StatusCode::Internal, "kolo: a node needs at least one rank");
  return SliceLayout{count / local_size, count % local_size};
}

NodeGatherPlan plan_node_gather(std::span<const int64_t> counts, const NodePlacement& placement) {
  const std::vector<int>& node_of = placement.node_of_rank;
  KOLO_CHECK(counts.size() == node_of.size() && placement.rank >= 0 && placement.rank < static_cast<int>(node_of.size()),
             StatusCode::Internal,
             "kolo: the hierarchical allgather got " + std::to_string(counts.size()) + " counts for " +
                 std::to_string(node_of.size()) + " ranks (rank " + std::to_string(placement.rank) + ")");
  NodeGatherPlan plan;
  const int mine = node_of[static_cast<std::size_t>(placement.rank)];
  plan.node_counts.assign(static_cast<std::size_t>(*std::max_element(node_of.begin(), node_of.end()) + 1), 0);
  for (std::size_t r = 0; r < counts.size(); ++r) {
    plan.node_counts[static_cast<std::size_t>(node_of[r])] += counts[r];
    if (node_of[r] == mine) plan.local_counts.push_back(counts[r]);
  }
  plan.node_offset = std::accumulate(plan.node_counts.begin(), plan.node_counts.begin() + mine, int64_t{0});
  plan.node_count = plan.node_counts[static_cast<std::size_t>(mine)];
  plan.total = std::accumulate(counts.begin(), counts.end(), int64_t{0});
  // Checked here, where every rank of every node sees the same numbers: only local rank 0
  // makes the cross-node call, and an error there alone would leave its node waiting in
  // the broadcast.
  KOLO_CHECK(plan.total <= std::numeric_limits<int>::max(), StatusCode::Unsupported,
             "kolo: the hierarchical allgather of " + std::to_string(plan.total) +
                 " elements exceeds what one MPI call can move (2^31 - 1)");

  // Where each rank's part is in node order (`next`, per node) and in rank order (`to`).
  std::vector<int64_t> next(plan.node_counts.size(), 0);
  std::exclusive_scan(plan.node_counts.begin(), plan.node_counts.end(), next.begin(), int64_t{0});
  int64_t to = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    int64_t& from = next[static_cast<std::size_t>(node_of[r])];
    if (counts[r] > 0) {
      if (from != to) plan.in_rank_order = false;
      plan.moves.push_back({from, to, counts[r]});
    }
    from += counts[r];
    to += counts[r];
  }
  if (plan.in_rank_order) plan.moves.clear();
  return plan;
}

namespace {

class HierarchicalBackend final : public Backend {
 public:
  explicit HierarchicalBackend(HierarchicalParts parts) : p_(std::move(parts)) {}

  std::string name() const override {
    const HierarchicalRoutes& r = p_.routes;
    const std::string which = r.allreduce && r.allgather ? "allreduce and allgather"
                              : r.allreduce              ? "allreduce"
                              : r.allgather              ? "allgather"
                                                         : "nothing";
    return "hierarchical " + which + " (" + p_.local->name() + " in the node, " + p_.cross->name() +
           " across; " + p_.flat->name() + " otherwise)";
  }
  bool supports(const Device& device) const override { return p_.flat->supports(device); }

  // The cross-node step scales this rank's slice (its share of the result, tail included),
  // so the scaling touches 1/L of the data, once, and the allgather spreads it.
  void allreduce(const void* input, void* output, int64_t count, DType dtype, ReduceOp op,
                 double scale) override {
    if (!p_.routes.allreduce) return p_.flat->allreduce(input, output, count, dtype, op, scale);
    if (count == 0) return;
    const int local_size = p_.placement.local_size;
    const std::size_t element = dtype_size(dtype);
    const SliceLayout s = slice_layout(count, local_size);
    const int64_t mine = s.per_rank + s.tail;  // this rank's slice, then the tail
    std::byte* slice = static_cast<std::byte*>(scratch_.get(*p_.memory, static_cast<std::size_t>(mine) * element));
    const auto at = [&](const void* base, int64_t elements) {
      return static_cast<const std::byte*>(base) + elements * static_cast<int64_t>(element);
    };
    const std::vector<int64_t> equal(static_cast<std::size_t>(local_size), s.per_rank);

    if (s.per_rank > 0) p_.local->reducescatter(input, slice, equal, dtype, op);
    if (s.tail > 0)
      p_.local->allreduce(at(input, s.tail_offset(local_size)), slice + s.per_rank * int64_t(element), s.tail,
                          dtype, op);
    p_.cross->allreduce(slice, slice, mine, dtype, op, scale);
    if (s.per_rank > 0) p_.local->allgatherv(slice, output, equal, dtype);
    if (s.tail > 0) {
      const CopyPiece tail{const_cast<std::byte*>(at(output, s.tail_offset(local_size))),
                           slice + s.per_rank * int64_t(element), s.tail};
      p_.memory->convert({&tail, 1}, dtype, dtype, 1.0);
    }
  }

  // One rank per node crosses nodes, with its whole node's block, rather than each local
  // rank with 1/L of it: the parts keep their own (uneven, possibly empty) counts, with
  // no re-slicing into equal pieces and tails, and the cross-node step is one allgather
  // among as many ranks as nodes. A 1/L share would only gain where a node has several
  // network links for its ranks to use at once.
  void allgatherv(const void* input, void* output, std::span<const int64_t> counts, DType dtype) override {
    if (!p_.routes.allgather) return p_.flat->allgatherv(input, output, counts, dtype);
    const NodeGatherPlan plan = plan_node_gather(counts, p_.placement);
    if (plan.total == 0) return;
    const int64_t element = static_cast<int64_t>(dtype_size(dtype));
    std::byte* gathered = static_cast<std::byte*>(
        plan.in_rank_order ? output : scratch_.get(*p_.memory, static_cast<std::size_t>(plan.total * element)));
    const auto at = [&](int64_t elements) { return gathered + elements * element; };

    // In rank order, `input` may already be at its place: then it is in place here too.
    if (plan.node_count > 0) p_.local->allgatherv(input, at(plan.node_offset), plan.local_counts, dtype);
    if (p_.placement.local_rank == 0) p_.cross->allgatherv(at(plan.node_offset), gathered, plan.node_counts, dtype);
    if (p_.placement.local_size > 1) {
      const int64_t after = plan.node_offset + plan.node_count;
      if (plan.node_offset > 0) p_.local->broadcast(gathered, plan.node_offset, dtype, 0);
      if (after < plan.total) p_.local->broadcast(at(after), plan.total - after, dtype, 0);
    }
    if (plan.in_rank_order) return;
    std::vector<CopyPiece> pieces;
    pieces.reserve(plan.moves.size());
    for (const NodeGatherPlan::Move& m : plan.moves)
      pieces.push_back({static_cast<std::byte*>(output) + m.to * element, at(m.from), m.count});
    p_.memory->convert(pieces, dtype, dtype, 1.0);
  }

  void broadcast(void* data, int64_t count, DType dtype, int root) override {
    p_.flat->broadcast(data, count, dtype, root);
  }
  void alltoallv(const void* input, std::span<const int64_t> send_counts, void* output,
                 std::span<const int64_t> recv_counts, DType dtype) override {
    p_.flat->alltoallv(input, send_counts, output, recv_counts, dtype);
  }
  void reducescatter(const void* input, void* output, std::span<const int64_t> counts, DType dtype,
                     ReduceOp op, double scale) override {
    p_.flat->reducescatter(input, output, counts, dtype, op, scale);
  }
  void barrier() override { p_.flat->barrier(); }
  void sendrecv(const void* send, std::size_t send_bytes, void* recv, std::size_t recv_bytes, int peer) override {
    p_.flat->sendrecv(send, send_bytes, recv, recv_bytes, peer);
  }

  void set_allreduce_chunk_bytes(int64_t bytes) override {
    for (Backend* b : {p_.local.get(), p_.cross.get(), p_.flat.get()}) b->set_allreduce_chunk_bytes(bytes);
  }

 private:
  HierarchicalParts p_;
  GrowingBuffer scratch_;  // the allreduce's slice, or the allgather in node order
};

}  // namespace

std::unique_ptr<Backend> make_hierarchical_backend(HierarchicalParts parts) {
  KOLO_CHECK(parts.local && parts.cross && parts.flat && parts.memory != nullptr, StatusCode::Internal,
             "kolo: the hierarchical collectives need their three backends and a device");
  KOLO_CHECK(!parts.routes.allgather || !parts.placement.node_of_rank.empty(), StatusCode::Internal,
             "kolo: the hierarchical allgather needs the node of every rank");
  return std::make_unique<HierarchicalBackend>(std::move(parts));
}

}  // namespace kolo::ops
