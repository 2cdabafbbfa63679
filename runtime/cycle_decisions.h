// The decisions of a background cycle that every rank takes alike from what the ranks
// agreed, in one place for Runtime::cycle (runtime.cc) and for kolo-sim's simulated cycle
// (sim/simulator.cc), so that the simulator runs the runtime's rules rather than a copy:
//   1. the cached tensors ready on every rank run first, in slot order, fused;
//   2. the slow path's responses are recorded in the response cache (those of the
//      operations it keeps), so that the next step negotiates them by bit.
#pragma once

#include <bit>
#include <cstdint>
#include <functional>
#include <vector>

#include "fusion.h"
#include "message.h"
#include "response_cache.h"

namespace kolo {

// Whether the response cache keeps an operation's parameters: not an allgather (its first
// dimension may change every call) nor a process set change.
bool cacheable(OpType type);

// Calls f(slot) for each slot whose bit is set in `bits`, in slot order.
template <typename F>
void for_each_slot(const std::vector<uint64_t>& bits, F&& f) {
  for (std::size_t w = 0; w < bits.size(); ++w)
    for (uint64_t word = bits[w]; word; word &= word - 1) f(static_cast<uint32_t>(w * 64 + std::countr_zero(word)));
}

// 1: the responses that run the cached tensors of `ready` (bits by slot), in slot order,
// fused by `fusion`. `named`: the responses carry the tensors' names (the timeline wants
// them; the runtime otherwise skips the copies).
std::vector<Response> plan_cached(const ResponseCache& cache, const std::vector<uint64_t>& ready,
                                  const FusionOptions& fusion, bool named);

// 2: records the slow path's responses that ran in the cache; request_of(response, i) is
// the request of the response's tensor i on this rank. Returns the slots whose entries the
// puts evicted: a rank waiting on one of them must send it by name.
std::vector<uint32_t> record_in_cache(ResponseCache& cache, const std::vector<Response>& responses,
                                      const std::function<Request(const Response&, std::size_t)>& request_of);

}  // namespace kolo
