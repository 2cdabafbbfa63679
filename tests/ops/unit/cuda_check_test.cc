// The CUDA error checks of ops/cuda/cuda_check.h, which ops/ and models/cuda share: the code
// and the message of a failed call. No device needed: the checks only format CUDA's codes.
#include <catch2/catch.hpp>

#include <string>

#include "ops/cuda/cuda_check.h"

using kolo::ops::cuda::check_cuda;
using kolo::ops::cuda::file_in_tree;

namespace {

kolo::Error error_of(cudaError_t error, const char* call) {
  try {
    check_cuda(error, call);
  } catch (const kolo::Error& e) {
    return e;
  }
  FAIL("check_cuda did not throw for " << cudaGetErrorName(error));
  throw;
}

cudaError_t out_of_memory() { return cudaErrorMemoryAllocation; }

}  // namespace

TEST_CASE("a successful CUDA call passes the check", "[cuda-check]") {
  CHECK_NOTHROW(check_cuda(cudaSuccess, "cudaMemcpy"));
  CHECK_NOTHROW(KOLO_CUDA_CHECK(cudaSuccess));
}

TEST_CASE("a failed CUDA call is a DeviceError naming the call and CUDA's error", "[cuda-check]") {
  const kolo::Error e = error_of(cudaErrorInvalidValue, "cudaMemcpyAsync (to host)");
  CHECK(e.code() == kolo::StatusCode::DeviceError);
  CHECK(std::string(e.what()) ==
        std::string("kolo: CUDA error in cudaMemcpyAsync (to host): cudaErrorInvalidValue (") +
            cudaGetErrorString(cudaErrorInvalidValue) + ")");
}

TEST_CASE("KOLO_CUDA_CHECK names the call as written and where it was made", "[cuda-check]") {
  int line = 0;
  try {
    line = __LINE__ + 1;
    KOLO_CUDA_CHECK(out_of_memory());
    FAIL("no error");
  } catch (const kolo::Error& e) {
    CHECK(e.code() == kolo::StatusCode::DeviceError);
    CHECK_THAT(e.what(),
               Catch::StartsWith("kolo: CUDA error in out_of_memory() (tests/ops/unit/cuda_check_test.cc:" +
                                 std::to_string(line) + "): cudaErrorMemoryAllocation ("));
  }
}

TEST_CASE("a source path is shown from the top of kolo's tree, however the build named it", "[cuda-check]") {
  CHECK(file_in_tree(KOLO_SOURCE_DIR "/models/cuda/conv_cudnn.cc") == "models/cuda/conv_cudnn.cc");
  CHECK(file_in_tree("../models/cuda/conv_cudnn.cc") == "models/cuda/conv_cudnn.cc");
  CHECK(file_in_tree("../../../tests/ops/unit/cuda_check_test.cc") == "tests/ops/unit/cuda_check_test.cc");
  CHECK(file_in_tree("./ops/cuda/cuda_parts.cc") == "ops/cuda/cuda_parts.cc");
  CHECK(file_in_tree("ops/cuda/cuda_parts.cc") == "ops/cuda/cuda_parts.cc");
}
