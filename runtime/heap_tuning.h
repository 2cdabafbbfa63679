// Keeps memory a training step frees for the next step (KOLO_KEEP_FREED_MEMORY, on by
// default).
//
// A training step frees its activations and gradients' temporaries and allocates the same
// sizes again in the next step. glibc's malloc, by default, hands the freed top of its heap
// back to the kernel once more than a few MiB are free there (its trim threshold follows
// the largest block freed, at most 64 MiB), and the next step's allocations then fault in
// every page afresh: one page fault and one zeroed 4 KiB page per page per step. PyTorch
// allocates through malloc, so its CPU training pays this unless the allocator is tuned
// or replaced (jemalloc, tcmalloc). Measured: PyTorch's ResNet-18 (batch 32, 32x32) and
// MNIST net on one core, 105 -> 356 and 980 -> 2870 img/s (docs/perf.md).
#pragma once

#include <string>

namespace kolo::detail {

// Makes glibc's malloc serve blocks below 32 MiB from its heap and keep up to 1 GiB free
// at the heap's top instead of trimming it. The memory a process holds then stays at its
// peak (a training loop's steady state) rather than shrinking between steps. Does nothing
// where the program has tuned malloc itself (any MALLOC_*_ variable or a GLIBC_TUNABLES
// entry for malloc) or under another allocator. Returns what it did, for the log.
std::string keep_freed_memory();

}  // namespace kolo::detail
