// The GPU tests' main: they need a CUDA device; without one (or in a build without CUDA)
// the whole suite reports itself skipped to CTest (exit code 77) and says why
// (support/gpu_skip.h: KOLO_TEST_REQUIRE_GPU=1 makes that a failure).
#include "kolo/models.h"
#include "support/catch_session.h"
#include "support/gpu_skip.h"

int main(int argc, char** argv) {
  if (kolo::models::cuda_device_count() == 0)
    return kolo_test::exit_code_without_gpu(
        "no CUDA device visible (or kolo was built without CUDA): the GPU tests did not run");
  return kolo_test::run_catch(argc, argv);
}
