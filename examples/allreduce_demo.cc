// A two-minute tour of kolo: every rank averages a gradient-like vector with the others,
// the way a training step would, and rank 0 prints what it got.
//
//   mpirun -np 2 build/examples/allreduce_demo
#include <cstdio>
#include <vector>

#include "kolo/kolo.h"

int main() {
  kolo::init();
  const int rank = kolo::rank(), size = kolo::size();

  // Each rank's "gradient" is filled with its rank number; their average is (size-1)/2.
  std::vector<float> grad(1'000'000, static_cast<float>(rank));
  std::vector<float> bias(10, 1.0f);
  kolo::Handle h1 = kolo::allreduce_async("grad/weight", kolo::view(grad));
  kolo::Handle h2 = kolo::allreduce_async("grad/bias", kolo::view(bias), {.op = kolo::ReduceOp::Sum});
  h1.wait().throw_if_error();
  h2.wait().throw_if_error();

  const float expected = (size - 1) / 2.0f;
  const bool ok = grad.front() == expected && grad.back() == expected && bias[0] == float(size);
  if (rank == 0) {
    std::printf("kolo allreduce demo: %d ranks\n", size);
    std::printf("  average of 1,000,000 floats: %.2f (expected %.2f)\n", grad[0], expected);
    std::printf("  sum of 10 ones over ranks:   %.0f (expected %d)\n", bias[0], size);
    std::printf("%s\n", ok ? "OK" : "WRONG RESULT");
  }
  kolo::shutdown();
  return ok ? 0 : 1;
}
