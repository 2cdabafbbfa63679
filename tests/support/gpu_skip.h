// What a GPU test does on a machine where it finds no CUDA device: report itself skipped to
// CTest (exit code 77, the tests' SKIP_RETURN_CODE), unless KOLO_TEST_REQUIRE_GPU=1 says that
// this machine has one. Then a device kolo cannot see (a broken driver, a build without CUDA)
// fails the test instead of passing for a skip.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace kolo_test {

inline int exit_code_without_gpu(const char* why) {
  const char* required = std::getenv("KOLO_TEST_REQUIRE_GPU");
  if (required != nullptr && std::strcmp(required, "1") == 0) {
    std::printf("FAILED: KOLO_TEST_REQUIRE_GPU=1, but %s\n", why);
    return 1;
  }
  std::printf("SKIPPED: %s\n", why);
  return 77;
}

}  // namespace kolo_test
