/* A program written in C only, linked against kolo::kolo (which is C++ inside). */
#include <stdio.h>

#include <kolo/kolo_c.h>

int c_api_check(void);

int main(void) {
  if (kolo_rank() != KOLO_INVALID_ARGUMENT) {
    fprintf(stderr, "kolo_rank before kolo_init: expected KOLO_INVALID_ARGUMENT\n");
    return 1;
  }
  if (kolo_init() != KOLO_OK) {
    fprintf(stderr, "kolo_init failed: %s\n", kolo_error_message());
    return 1;
  }
  const int rank = kolo_rank();
  const int failures = c_api_check();
  kolo_shutdown();
  printf("rank %d: %s\n", rank, failures == 0 ? "consumer OK" : "consumer FAILED");
  return failures == 0 ? 0 : 1;
}
