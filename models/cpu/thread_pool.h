// The CPU kernels' threads: a fixed pool that runs parallel_for over index ranges.
// Sized by kolo::models::set_num_threads (default 1); the calling thread takes part.
#pragma once

#include <cstdint>
#include <functional>

namespace kolo::models::cpu {

// Calls body(begin, end) on disjoint chunks covering [0, count), one chunk per thread,
// and returns when all are done. Thread t gets chunk t, so per-thread scratch can be
// indexed by the `thread` argument.
void parallel_for(int64_t count, const std::function<void(int64_t begin, int64_t end, int thread)>& body);

// The same for element-wise loops, which are memory-bound: on this thread alone when
// `count` is too small to be worth waking the others.
void parallel_for_elements(int64_t count, const std::function<void(int64_t begin, int64_t end)>& body);

}  // namespace kolo::models::cpu
