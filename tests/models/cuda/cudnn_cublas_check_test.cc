// The model layer's cuDNN and cuBLAS error checks (models/cuda/cudnn_cublas_check.h): a
// failure is a DeviceError, except what the library does not support (Unsupported, which
// the convolution layout search treats as "this layout is out"). No device needed.
#include <catch2/catch.hpp>

#include <string>

#include "models/cuda/cudnn_cublas_check.h"

namespace {

template <typename Call>
kolo::Error error_of(Call call) {
  try {
    call();
  } catch (const kolo::Error& e) {
    return e;
  }
  FAIL("no error");
  throw;
}

}  // namespace

TEST_CASE("cuDNN's failures are device errors, what it does not support is Unsupported", "[cuda-check]") {
  CHECK_NOTHROW(KOLO_CUDNN_CHECK(CUDNN_STATUS_SUCCESS));
  const kolo::Error bad = error_of([] { KOLO_CUDNN_CHECK(CUDNN_STATUS_EXECUTION_FAILED); });
  CHECK(bad.code() == kolo::StatusCode::DeviceError);
  CHECK_THAT(bad.what(), Catch::StartsWith("kolo: cuDNN error in CUDNN_STATUS_EXECUTION_FAILED "
                                           "(tests/models/cuda/cudnn_cublas_check_test.cc:"));
  CHECK_THAT(bad.what(), Catch::EndsWith(std::string("): ") + cudnnGetErrorString(CUDNN_STATUS_EXECUTION_FAILED)));
  for (cudnnStatus_t s :
       {CUDNN_STATUS_NOT_SUPPORTED, CUDNN_STATUS_NOT_SUPPORTED_SHAPE, CUDNN_STATUS_NOT_SUPPORTED_LAYOUT})
    CHECK(error_of([s] { KOLO_CUDNN_CHECK(s); }).code() == kolo::StatusCode::Unsupported);
}

TEST_CASE("cuBLAS's failures are device errors, what it does not support is Unsupported", "[cuda-check]") {
  CHECK_NOTHROW(KOLO_CUBLAS_CHECK(CUBLAS_STATUS_SUCCESS));
  const kolo::Error bad = error_of([] { KOLO_CUBLAS_CHECK(CUBLAS_STATUS_EXECUTION_FAILED); });
  CHECK(bad.code() == kolo::StatusCode::DeviceError);
  CHECK_THAT(bad.what(), Catch::Contains("kolo: cuBLAS error in CUBLAS_STATUS_EXECUTION_FAILED"));
  CHECK(error_of([] { KOLO_CUBLAS_CHECK(CUBLAS_STATUS_NOT_SUPPORTED); }).code() == kolo::StatusCode::Unsupported);
}
