// The C++ side of the package test: kolo::init(), an allreduce checked against its
// expected value, and (when built with C) the C API's checks from c_api_check.c.
//
// Compiled without MPI's include path: kolo::kolo passes MPI on to the link only, and
// kolo/kolo.h needs no MPI (init(MPI_Comm) is in kolo/kolo_mpi.h).
#include <cstdio>
#include <vector>

#if defined(__has_include)
#if __has_include(<mpi.h>)
#error "kolo::kolo put MPI's headers on this program's include path"
#endif
#endif

#include <kolo/kolo.h>

#ifdef CONSUMER_WITH_C
extern "C" int c_api_check(void);
#endif

int main() {
  kolo::init();
  const int rank = kolo::rank(), size = kolo::size();
  int failures = 0;

  // Rank r contributes r + 1 everywhere: the sum is size * (size + 1) / 2.
  std::vector<double> values(1000, rank + 1.0);
  kolo::allreduce("consumer/sum", kolo::view(values), {.op = kolo::ReduceOp::Sum});
  const double expected_sum = size * (size + 1) / 2.0;
  for (double v : values) failures += v != expected_sum;

  std::vector<float> grad(4096, static_cast<float>(rank));
  kolo::Handle h = kolo::allreduce_async("consumer/average", kolo::view(grad));
  if (!h.wait().ok()) ++failures;
  const float expected_average = (size - 1) / 2.0f;
  for (float v : grad) failures += v != expected_average;

#ifdef CONSUMER_WITH_C
  failures += c_api_check() != 0;
#endif
  kolo::shutdown();
  std::printf("rank %d: %s\n", rank, failures == 0 ? "consumer OK" : "consumer FAILED");
  return failures == 0 ? 0 : 1;
}
