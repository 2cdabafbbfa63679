#include "heap_tuning.h"

#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace kolo::detail {

namespace {

// The program's own malloc settings win: each of these is read by glibc at start-up.
const char* programs_own_setting() {
  for (const char* name : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_"})
    if (std::getenv(name) != nullptr) return name;
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables != nullptr && std::strstr(tunables, "glibc.malloc.") != nullptr) return "GLIBC_TUNABLES";
  return nullptr;
}

}  // namespace

std::string keep_freed_memory() {
#if defined(__GLIBC__)
  if (const char* own = programs_own_setting()) return std::string("left as it is: the program sets ") + own;
  // Setting either turns off glibc's own moving thresholds: both are set. 32 MiB is the
  // largest mmap threshold glibc accepts on 64-bit; larger blocks are mapped each time.
  const bool mmap_set = mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1;
  const bool trim_set = mallopt(M_TRIM_THRESHOLD, 1 << 30) == 1;
  if (mmap_set && trim_set) return "blocks below 32 MiB from the heap, up to 1 GiB kept free at its top";
  return "glibc refused the settings";
#else
  return "left as it is: not glibc's malloc";
#endif
}

}  // namespace kolo::detail
