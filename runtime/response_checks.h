// What rank 0 sends, checked against this rank's own state before anything is sized,
// allocated or indexed by it. The parser (message.cc) checks that a message is well formed;
// these check that it fits this rank: a response for 100 elements must not run on a local
// tensor of 10, a cache slot must be one of this rank's slots, and the sizes other ranks
// report (an allgather's first dimensions, an alltoall's splits) must add up to a buffer
// that 64 bits can count. A damaged message, or a peer that lies, then gives an error that
// says what did not fit instead of a read or write past a buffer.
//
// Each throws Error(CommFailure, "kolo: damaged negotiation message ..."): as for a message
// that does not parse, the rank's loop stops and the job ends (the ranks no longer agree on
// what they are running).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "message.h"
#include "tensor_queue.h"

namespace kolo {

// Every slot in `slots` is one of a cache of `capacity` slots; `from` names the sender.
void check_cache_slots(std::span<const uint32_t> slots, int capacity, const std::string& from);

// Response `r` fits this rank's entries for it (entries[i] for r.names[i], nullptr where
// this rank has joined an allreduce): the same operation and dtype, the element counts of
// the local tensors, an allgather's first dimension per rank with this rank's own, a root
// among the set's ranks (`global_ranks`, empty: the global set), and buffers whose bytes
// fit in 64 bits.
void check_response_fits(const Response& r, std::span<TensorEntry* const> entries, int rank, int size,
                         std::span<const int> global_ranks);

// The rows of a gathered result (an allgather's first dimensions, the rows an alltoall
// receives from each rank), checked: none negative, and the total, times `row_elements`
// elements of `element_bytes`, fits in 64 bits. Returns the total.
int64_t checked_total_rows(std::span<const int64_t> rows, int64_t row_elements, std::size_t element_bytes,
                           const char* what);

}  // namespace kolo
