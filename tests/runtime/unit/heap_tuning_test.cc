// runtime/heap_tuning.h: after keep_freed_memory(), a loop that frees and reallocates the
// same 100 MiB every round faults its pages in once, not every round; without it, glibc
// hands the freed memory back and faults it in again (the premise, checked too, so that
// the test fails where the tuning stops working). Each case runs in a child process, so
// that the tuning never reaches the other tests.
#include <catch2/catch.hpp>

#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/heap_tuning.h"

namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizerAllocator = true;  // malloc is the sanitizer's: mallopt does not reach it
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitizerAllocator = true;
#else
constexpr bool kSanitizerAllocator = false;
#endif
#else
constexpr bool kSanitizerAllocator = false;
#endif

long minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// Page faults over rounds 2-5 of: allocate 25 blocks of 4 MiB, write every page, free all.
// 100 MiB is above the largest trim threshold glibc's moving thresholds reach (64 MiB).
long faults_in_later_rounds() {
  constexpr std::size_t kBlock = std::size_t{4} << 20;
  long faults = 0;
  for (int round = 0; round < 5; ++round) {
    const long before = minor_faults();
    std::vector<char*> blocks;
    for (int i = 0; i < 25; ++i) {
      char* block = static_cast<char*>(std::malloc(kBlock));
      for (std::size_t at = 0; at < kBlock; at += 4096) block[at] = char(i);
      blocks.push_back(block);
    }
    for (char* block : blocks) std::free(block);
    if (round > 0) faults += minor_faults() - before;
  }
  return faults;
}

// Runs body in a child process; its exit status carries whether the faults were below `most`.
bool child_faults_at_most(bool tune, long most) {
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // Faults counted per 4 KiB page wherever the machine makes transparent huge pages of
    // anonymous memory by default (the premise would read a few hundred there).
    prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
    if (tune) kolo::detail::keep_freed_memory();
    _exit(faults_in_later_rounds() <= most ? 0 : 1);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  return WEXITSTATUS(status) == 0;
}

}  // namespace

TEST_CASE("keep_freed_memory: memory freed in one round serves the next without page faults", "[heap]") {
  if (kSanitizerAllocator) {
    WARN("skipped: a sanitizer's allocator replaces glibc's malloc in this build");
    return;
  }
  if (std::getenv("MALLOC_TRIM_THRESHOLD_") || std::getenv("MALLOC_TOP_PAD_") || std::getenv("MALLOC_MMAP_THRESHOLD_") ||
      std::getenv("GLIBC_TUNABLES")) {
    WARN("skipped: this run tunes malloc itself");
    return;
  }
  // 4 rounds x 25,600 pages untuned; a few hundred tuned (the vector, stray pages).
  CHECK_FALSE(child_faults_at_most(false, 20000));  // the premise: glibc trims by default
  CHECK(child_faults_at_most(true, 2000));
}

TEST_CASE("keep_freed_memory leaves a program's own malloc settings alone", "[heap]") {
  ::setenv("MALLOC_TOP_PAD_", "0", 1);
  CHECK(std::string(kolo::detail::keep_freed_memory()).find("MALLOC_TOP_PAD_") != std::string::npos);
  ::unsetenv("MALLOC_TOP_PAD_");
}
