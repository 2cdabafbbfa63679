// The checks a rank makes on rank 0's answer against its own state (runtime/response_checks.h):
// a parsed ResponseList goes on into check_cache_slots against a real ResponseCache, and
// into check_response_fits against local tensors, and whatever passes is then used as the
// executor uses it (the slots erased, the local buffers read and written for the counts,
// an allgather's output sized and filled from the first dimensions). Any read or write
// past a buffer is AddressSanitizer's to report; a check that lets a response through
// whose counts do not fit this rank's tensors fails a property.
//
// Input: split_in_two(local state, response list). The local state's bytes give the job's
// size (1-8), this rank, the cache's capacity (0-64), whether this rank has joined, the
// local tensors' shape [d0, d1], whether their dtype differs from the response's, and
// their broadcast root.
#include <cstring>
#include <vector>

#include "fuzz_support.h"
#include "runtime/message.h"
#include "runtime/response_cache.h"
#include "runtime/response_checks.h"

namespace {

struct LocalState {
  int size = 2, rank = 0, capacity = 8, root = 0;
  bool joined = false, other_dtype = false;
  int64_t d0 = 4, d1 = 3;
};

LocalState read_state(std::string_view bytes) {
  const auto at = [&](std::size_t i) { return i < bytes.size() ? static_cast<uint8_t>(bytes[i]) : uint8_t{0}; };
  LocalState s;
  s.size = 1 + at(0) % 8;
  s.rank = at(1) % s.size;
  s.capacity = at(2) % 65;
  s.joined = at(3) & 1;
  s.other_dtype = at(3) & 2;
  s.d0 = at(4);
  s.d1 = at(5) % 16;
  s.root = at(6) % s.size;
  return s;
}

constexpr int64_t kMaxBytes = 1 << 20;  // an allgather output the harness allocates: larger ones are only sized

void erase_slots(const kolo::ResponseList& list, const LocalState& s) {
  try {
    kolo::check_cache_slots(list.invalidate_slots, s.capacity, "the coordinator");
  } catch (const kolo::Error&) {
    return;
  }
  kolo::ResponseCache cache(s.capacity);
  for (int i = 0; i < s.capacity && i < 3; ++i) {
    kolo::Request q;
    q.name = "t" + std::to_string(i);
    cache.put(q);
  }
  for (uint32_t slot : list.invalidate_slots) cache.erase(slot);
}

void run_response(const kolo::Response& r, const LocalState& s) {
  // This rank's tensors for the response: [d0, d1] of the response's operation.
  std::vector<kolo::TensorEntry> tensors(r.names.size());
  std::vector<std::vector<std::byte>> memory(r.names.size());
  std::vector<kolo::TensorEntry*> entries;
  for (std::size_t i = 0; i < r.names.size(); ++i) {
    if (s.joined && r.type == kolo::OpType::Allreduce) {
      entries.push_back(nullptr);
      continue;
    }
    kolo::TensorEntry& e = tensors[i];
    e.request.name = r.names[i];
    e.request.type = r.type;
    e.request.dtype = s.other_dtype ? (r.dtype == kolo::DType::Float64 ? kolo::DType::Float32 : kolo::DType::Float64)
                                    : r.dtype;
    e.request.device = r.device;
    e.request.root = s.root;
    e.request.shape = {s.d0, s.d1};
    memory[i].resize(static_cast<std::size_t>(s.d0 * s.d1) * kolo::dtype_size(e.request.dtype));
    e.input = e.output = memory[i].data();
    entries.push_back(&e);
  }
  try {
    kolo::check_response_fits(r, entries, s.rank, s.size, {});
  } catch (const kolo::Error&) {
    return;
  }
  if (r.kind != kolo::Response::Kind::Run) return;
  const std::size_t element = kolo::dtype_size(r.dtype);
  switch (r.type) {
    case kolo::OpType::Allreduce:
    case kolo::OpType::Broadcast: {
      int64_t total = 0;
      for (std::size_t i = 0; i < entries.size(); ++i) {
        total += r.element_counts[i];
        if (entries[i] == nullptr) continue;
        kolo_fuzz::require(r.element_counts[i] == s.d0 * s.d1, "a response that passes counts the local tensor's elements");
        const std::size_t bytes = static_cast<std::size_t>(r.element_counts[i]) * element;
        if (bytes > 0) std::memset(entries[i]->output, 0, bytes);  // the local tensor, as the backend writes it
      }
      int64_t fused_bytes = 0;  // a joined rank's zeros, the fusion buffer
      kolo_fuzz::require(!__builtin_mul_overflow(total, static_cast<int64_t>(element), &fused_bytes),
                         "a response that passes has a byte count that fits in 64 bits");
      break;
    }
    case kolo::OpType::Allgather: {
      const int64_t rows = kolo::checked_total_rows(r.rank_first_dims, s.d1, element, "first dimensions");
      kolo_fuzz::require(r.rank_first_dims.size() == static_cast<std::size_t>(s.size) &&
                             r.rank_first_dims[static_cast<std::size_t>(s.rank)] == s.d0,
                         "a response that passes has this rank's first dimension at its place");
      const int64_t row_bytes = s.d1 * static_cast<int64_t>(element);
      if (rows * row_bytes > kMaxBytes) break;
      std::vector<std::byte> out(static_cast<std::size_t>(rows * row_bytes));
      int64_t offset = 0;
      for (int q = 0; q < s.rank; ++q) offset += r.rank_first_dims[static_cast<std::size_t>(q)];
      if (s.d0 * row_bytes > 0)
        std::memcpy(out.data() + offset * row_bytes, entries[0]->input, static_cast<std::size_t>(s.d0 * row_bytes));
      break;
    }
    default: break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const auto [state_bytes, message] = kolo_fuzz::split_in_two(kolo_fuzz::as_text(data, size));
  const LocalState state = read_state(state_bytes);
  kolo::ResponseList list;
  try {
    list = kolo::parse_response_list(std::string(message));
  } catch (const kolo::Error&) {
    return 0;
  }
  erase_slots(list, state);
  for (const kolo::Response& r : list.responses) run_response(r, state);
  return 0;
}
