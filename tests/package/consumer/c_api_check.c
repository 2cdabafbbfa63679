/* The C API from C: an in-place int32 sum, a broadcast from the last rank, an allgather
 * with a different first dimension per rank, and failures with their kolo_status.
 * Returns 0 when all are right. */
#include <stdio.h>
#include <string.h>

#include <kolo/kolo_c.h>

static int check(int ok, const char* what) {
  if (!ok) fprintf(stderr, "rank %d: C API check failed: %s (%s)\n", kolo_rank(), what, kolo_error_message());
  return ok ? 0 : 1;
}

int c_api_check(void) {
  const int rank = kolo_rank(), size = kolo_size();
  int failures = 0;

  int32_t counts[8];
  int64_t shape[1] = {8};
  for (int i = 0; i < 8; ++i) counts[i] = rank + i;
  kolo_handle h = kolo_allreduce_async("c/sum", counts, counts, KOLO_INT32, 1, shape, KOLO_SUM,
                                       1.0, 1.0, -1);
  failures += check(h > 0, "kolo_allreduce_async");
  if (h > 0) failures += check(kolo_wait(h) == 0, "kolo_wait (allreduce)");
  for (int i = 0; i < 8; ++i)  /* sum over r of (r + i) */
    failures += check(counts[i] == size * (size - 1) / 2 + size * i, "allreduce result");

  float params[3] = {(float)rank, (float)rank, (float)rank};
  int64_t pshape[1] = {3};
  h = kolo_broadcast_async("c/params", params, KOLO_FLOAT32, 1, pshape, size - 1, -1);
  failures += check(h > 0, "kolo_broadcast_async");
  if (h > 0) {
    while (kolo_poll(h) == 0) {
    }
    failures += check(kolo_wait(h) == 0, "kolo_wait (broadcast)");
  }
  for (int i = 0; i < 3; ++i) failures += check(params[i] == (float)(size - 1), "broadcast result");

  /* Rank r sends r + 1 rows of 2 values, each equal to r. */
  int64_t rows[16 * 2];
  const int64_t mine = rank + 1;
  for (int i = 0; i < 2 * mine; ++i) rows[i] = rank;
  int64_t gshape[2] = {mine, 2};
  h = kolo_allgather_async("c/gather", rows, KOLO_INT64, 2, gshape, -1);
  failures += check(h > 0, "kolo_allgather_async");
  int64_t gathered[64];
  int64_t first_dim = 0;
  if (h > 0)
    failures += check(kolo_wait_output(h, gathered, sizeof gathered, &first_dim) == 0, "kolo_wait_output");
  failures += check(first_dim == (int64_t)size * (size + 1) / 2, "allgather first dimension");
  int64_t at = 0;
  for (int r = 0; r < size && at + 2 * (r + 1) <= 64; ++r)
    for (int i = 0; i < 2 * (r + 1); ++i) failures += check(gathered[at++] == r, "allgather result");

  /* Each failure says what failed. */
  h = kolo_allreduce_async(NULL, counts, counts, KOLO_INT32, 1, shape, KOLO_SUM, 1.0, 1.0, -1);
  failures += check(h == KOLO_INVALID_ARGUMENT, "a NULL name is KOLO_INVALID_ARGUMENT");
  failures += check(strstr(kolo_error_message(), "name") != NULL, "the message names the name");
  failures += check(kolo_wait(12345678) == KOLO_INVALID_ARGUMENT, "an unknown handle is KOLO_INVALID_ARGUMENT");
  failures += check(strcmp(kolo_status_name(KOLO_IO_ERROR), "IoError") == 0, "kolo_status_name");
  return failures;
}
