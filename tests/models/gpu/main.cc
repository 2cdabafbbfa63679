// The GPU tests' main: they need a CUDA device; without one (or in a build without CUDA)
// the whole suite reports itself skipped to CTest (exit code 77) and says why.
#include <cstdio>

#include "kolo/models.h"
#include "support/catch_session.h"

int main(int argc, char** argv) {
  if (kolo::models::cuda_device_count() == 0) {
    std::printf("SKIPPED: no CUDA device visible (or kolo was built without CUDA): the GPU tests did not run\n");
    return 77;
  }
  return kolo_test::run_catch(argc, argv);
}
