#include "hierarchical_backend.h"

#include <string>
#include <vector>

namespace kolo::ops {

SliceLayout slice_layout(int64_t count, int local_size) {
  if (local_size <= 0) throw Error(StatusCode::InvalidArgument, "kolo: a node needs at least one rank");
  return SliceLayout{count / local_size, count % local_size};
}

namespace {

class HierarchicalBackend final : public Backend {
 public:
  explicit HierarchicalBackend(HierarchicalParts parts) : p_(std::move(parts)) {}

  std::string name() const override { return "hierarchical(" + p_.local->name() + " in the node, " + p_.cross->name() + " across)"; }
  bool supports(const Device& device) const override { return p_.flat->supports(device); }

  void allreduce(const void* input, void* output, int64_t count, DType dtype, ReduceOp op) override {
    if (count == 0) return;
    const std::size_t element = dtype_size(dtype);
    const SliceLayout s = slice_layout(count, p_.local_size);
    const int64_t mine = s.per_rank + s.tail;  // this rank's slice, then the tail
    std::byte* slice = static_cast<std::byte*>(scratch_.get(*p_.memory, static_cast<std::size_t>(mine) * element));
    const auto at = [&](const void* base, int64_t elements) {
      return static_cast<const std::byte*>(base) + elements * static_cast<int64_t>(element);
    };
    const std::vector<int64_t> equal(static_cast<std::size_t>(p_.local_size), s.per_rank);

    if (s.per_rank > 0) p_.local->reducescatter(input, slice, equal, dtype, op);
    if (s.tail > 0)
      p_.local->allreduce(at(input, s.tail_offset(p_.local_size)), slice + s.per_rank * int64_t(element), s.tail,
                          dtype, op);
    p_.cross->allreduce(slice, slice, mine, dtype, op);
    if (s.per_rank > 0) p_.local->allgatherv(slice, output, equal, dtype);
    if (s.tail > 0) {
      const CopyPiece tail{const_cast<std::byte*>(at(output, s.tail_offset(p_.local_size))),
                           slice + s.per_rank * int64_t(element), s.tail};
      p_.memory->convert({&tail, 1}, dtype, dtype, 1.0);
    }
  }

  void allgatherv(const void* input, void* output, std::span<const int64_t> counts, DType dtype) override {
    p_.flat->allgatherv(input, output, counts, dtype);
  }
  void broadcast(void* data, int64_t count, DType dtype, int root) override {
    p_.flat->broadcast(data, count, dtype, root);
  }
  void alltoallv(const void* input, std::span<const int64_t> send_counts, void* output,
                 std::span<const int64_t> recv_counts, DType dtype) override {
    p_.flat->alltoallv(input, send_counts, output, recv_counts, dtype);
  }
  void reducescatter(const void* input, void* output, std::span<const int64_t> counts, DType dtype,
                     ReduceOp op) override {
    p_.flat->reducescatter(input, output, counts, dtype, op);
  }
  void barrier() override { p_.flat->barrier(); }

  void set_allreduce_chunk_bytes(int64_t bytes) override {
    for (Backend* b : {p_.local.get(), p_.cross.get(), p_.flat.get()}) b->set_allreduce_chunk_bytes(bytes);
  }

 private:
  HierarchicalParts p_;
  GrowingBuffer scratch_;
};

}  // namespace

std::unique_ptr<Backend> make_hierarchical_backend(HierarchicalParts parts) {
  if (!parts.local || !parts.cross || !parts.flat || parts.memory == nullptr)
    throw Error(StatusCode::InvalidArgument, "kolo: the hierarchical allreduce needs its three backends and a device");
  return std::make_unique<HierarchicalBackend>(std::move(parts));
}

}  // namespace kolo::ops
