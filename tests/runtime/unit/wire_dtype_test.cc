// Which dtype a response's tensors travel in (runtime/executor.h): 16 bits when a float
// tensor is compressed, its own dtype otherwise.
#include <catch2/catch.hpp>

#include <string>

#include "kolo/kolo.h"
#include "runtime/executor.h"

using kolo::DType;

TEST_CASE("compressed float tensors travel in 16 bits, others as they are", "[compression]") {
  using kolo::Compression;
  CHECK(kolo::wire_dtype(DType::Float32, Compression::FP16) == DType::Float16);
  CHECK(kolo::wire_dtype(DType::Float64, Compression::FP16) == DType::Float16);
  CHECK(kolo::wire_dtype(DType::Float32, Compression::BF16) == DType::BFloat16);
  CHECK(kolo::wire_dtype(DType::Float32, Compression::None) == DType::Float32);
  CHECK(kolo::wire_dtype(DType::Float16, Compression::BF16) == DType::Float16);
  CHECK(kolo::wire_dtype(DType::BFloat16, Compression::FP16) == DType::BFloat16);
  CHECK(kolo::wire_dtype(DType::Int32, Compression::FP16) == DType::Int32);
  CHECK(std::string(kolo::compression_name(Compression::BF16)) == "bf16");
}
