#include "response_checks.h"

#include <algorithm>

#include "kolo/check.h"

namespace kolo {
namespace {

[[noreturn]] void damaged(const std::string& why) {
  throw Error(StatusCode::CommFailure, "kolo: damaged negotiation message (a response from the coordinator): " + why);
}

std::string tensor(const Response& r, std::size_t i) {
  return std::string(op_type_name(r.type)) + " of '" + r.names[i] + "'";
}

// a * b and a + b, or the error when they do not fit in 64 bits. `what()` names what
// overflowed; it is called only then (these run for every tensor of every response).
template <typename What>
int64_t times(int64_t a, int64_t b, const What& what) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) damaged(what() + ": more bytes than 64 bits count");
  return product;
}

template <typename What>
int64_t plus(int64_t a, int64_t b, const What& what) {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) damaged(what() + ": more elements than 64 bits count");
  return sum;
}

}  // namespace

void check_cache_slots(std::span<const uint32_t> slots, int capacity, const std::string& from) {
  for (uint32_t slot : slots)
    if (capacity < 0 || slot >= static_cast<uint32_t>(capacity))
      throw Error(StatusCode::CommFailure, "kolo: damaged negotiation message (from " + from +
                                               "): it invalidates response-cache slot " + std::to_string(slot) +
                                               " of a cache of " + std::to_string(capacity) + " slots");
}

int64_t checked_total_rows(std::span<const int64_t> rows, int64_t row_elements, std::size_t element_bytes,
                           const char* what) {
  const auto named = [what] { return std::string(what); };
  int64_t total = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] < 0) damaged(named() + ": rank " + std::to_string(i) + " has " + std::to_string(rows[i]) + " rows");
    total = plus(total, rows[i], named);
  }
  times(times(total, row_elements, named), static_cast<int64_t>(element_bytes), named);
  return total;
}

void check_response_fits(const Response& r, std::span<TensorEntry* const> entries, int rank, int size,
                         std::span<const int> global_ranks) {
  if (r.kind != Response::Kind::Run) return;
  if (entries.size() != r.names.size())
    damaged("a response names " + std::to_string(r.names.size()) + " tensors where this rank matched " +
            std::to_string(entries.size()));
  if (r.type != OpType::Allreduce && entries[0] == nullptr)
    damaged("the " + tensor(r, 0) + " runs where this rank has no such tensor");
  const std::size_t element = dtype_size(r.dtype);
  int64_t total = 0;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const int64_t count = r.element_counts[i];
    total = plus(total, count, [&] { return "the " + tensor(r, i); });
    const TensorEntry* e = entries[i];
    if (e == nullptr) continue;  // a joined rank's zeros: sized by the response alone
    const Request& mine = e->request;
    if (mine.type != r.type || mine.dtype != r.dtype || mine.device.kind != r.device.kind)
      damaged("it runs " + tensor(r, i) + " as " + std::string(dtype_name(r.dtype)) + " where this rank submitted " +
              op_type_name(mine.type) + " of " + dtype_name(mine.dtype));
    // Allreduce and broadcast read and write count elements of the local tensor; the
    // others size their buffers from the local shape and the peers' first dimensions.
    if ((r.type == OpType::Allreduce || r.type == OpType::Broadcast) && count != mine.num_elements())
      damaged("it runs " + tensor(r, i) + " on " + std::to_string(count) + " elements, but this rank's tensor has " +
              std::to_string(mine.num_elements()));
  }
  times(total, static_cast<int64_t>(element), [&] { return "the " + tensor(r, 0); });
  switch (r.type) {  // entries[0] is this rank's tensor: only an allreduce runs without one
    case OpType::Allgather: {
      const Shape& shape = entries[0]->request.shape;
      if (r.rank_first_dims.size() != static_cast<std::size_t>(size) || shape.empty() ||
          r.rank_first_dims[static_cast<std::size_t>(rank)] != shape[0])
        damaged("the " + tensor(r, 0) + " gives " + std::to_string(r.rank_first_dims.size()) +
                " first dimensions for " + std::to_string(size) + " ranks, not this rank's " +
                (shape.empty() ? std::string("(a scalar)") : std::to_string(shape[0])));
      int64_t row = 1;
      for (std::size_t d = 1; d < shape.size(); ++d)
        row = times(row, shape[d], [] { return std::string("this rank's tensor"); });
      checked_total_rows(r.rank_first_dims, row, element, "an allgather's first dimensions");
      break;
    }
    case OpType::Broadcast: {
      const bool member = global_ranks.empty()
                              ? r.root >= 0 && r.root < size
                              : std::find(global_ranks.begin(), global_ranks.end(), r.root) != global_ranks.end();
      const int32_t mine = entries[0]->request.root;
      if (!member || r.root != mine)
        damaged("the " + tensor(r, 0) + " has root " + std::to_string(r.root) + ", where this rank's has " +
                std::to_string(mine));
      break;
    }
    default: break;
  }
}

}  // namespace kolo
