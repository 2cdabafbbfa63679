// The GPU's batched copy/cast kernels (ops/cuda/batched_convert.cu through CudaOps::convert)
// against the host reference (ops::convert_on_cpu): fp32 <-> fp16 and bf16 casts with
// scaling, float64, integer copies, zeros, many pieces per call (more than one launch),
// empty pieces, and sizes that end mid-block.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstring>
#include <random>

#include "ops/cuda/cuda_device.h"
#include "ops/device.h"
#include "ops/dtype.h"
#include "support/device_memory.h"
#include "support/mpi_util.h"

using kolo::DType;
using kolo::ops::CopyPiece;
using namespace kolo_test;

namespace {

std::vector<std::byte> random_floats(DType d, int64_t count, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 100.0f);
  std::vector<std::byte> bytes(static_cast<std::size_t>(count) * kolo::dtype_size(d));
  for (int64_t i = 0; i < count; ++i) {
    float v = normal(rng);
    if (i % 97 == 5) v = 70000.0f;   // overflows fp16
    if (i % 89 == 3) v = 1e-6f;      // fp16 subnormal
    switch (d) {
      case DType::Float32: std::memcpy(&bytes[i * 4], &v, 4); break;
      case DType::Float64: {
        const double x = double(v) / 3.0;
        std::memcpy(&bytes[i * 8], &x, 8);
        break;
      }
      case DType::Float16: {
        const uint16_t h = kolo::ops::float_to_half(v);
        std::memcpy(&bytes[i * 2], &h, 2);
        break;
      }
      case DType::BFloat16: {
        const uint16_t b = kolo::ops::float_to_bfloat16(v);
        std::memcpy(&bytes[i * 2], &b, 2);
        break;
      }
      default: bytes[i * kolo::dtype_size(d)] = std::byte(i % 251);
    }
  }
  return bytes;
}

// Converts `sizes` pieces of random data from `from` to `to` with `factor` on the GPU (one
// call) and on the CPU; the bytes must be equal.
void check_convert(DType from, DType to, double factor, const std::vector<int64_t>& sizes) {
  std::mt19937 rng(42);
  auto gpu_ops = kolo::ops::cuda::make_cuda_ops(0);
  std::vector<std::vector<std::byte>> inputs;
  std::vector<std::unique_ptr<DeviceVector<std::byte>>> device_in, device_out;
  std::vector<CopyPiece> pieces;
  for (std::size_t p = 0; p < sizes.size(); ++p) {
    inputs.push_back(random_floats(from, sizes[p], rng));
    device_in.push_back(std::make_unique<DeviceVector<std::byte>>(inputs.back()));
    device_out.push_back(std::make_unique<DeviceVector<std::byte>>(
        std::vector<std::byte>(static_cast<std::size_t>(sizes[p]) * kolo::dtype_size(to), std::byte{0x55})));
    // Every seventh piece is zeros (a joined rank's part of a fusion buffer).
    pieces.push_back({device_out.back()->data(), p % 7 == 6 ? nullptr : device_in.back()->data(), sizes[p]});
  }
  gpu_ops->convert(pieces, from, to, factor);
  kolo::ops::wait_for(*gpu_ops->record(), std::chrono::seconds(60), "the conversion kernels");
  for (std::size_t p = 0; p < sizes.size(); ++p) {
    std::vector<std::byte> expected(static_cast<std::size_t>(sizes[p]) * kolo::dtype_size(to));
    const CopyPiece host{expected.data(), p % 7 == 6 ? nullptr : inputs[p].data(), sizes[p]};
    kolo::ops::make_cpu_ops()->convert({&host, 1}, from, to, factor);
    INFO(kolo::dtype_name(from) << " -> " << kolo::dtype_name(to) << " x" << factor << ", piece " << p << " of "
                                << sizes[p] << " elements");
    REQUIRE(device_out[p]->read() == expected);
  }
}

}  // namespace

TEST_CASE("GPU casts between float32 and 16-bit floats round exactly as the CPU reference", "[gpu][kernels]") {
  const std::vector<int64_t> sizes = {1, 2047, 2048, 2049, 100000, 0, 3, 7};
  for (double factor : {1.0, 0.125, 3.0}) {
    check_convert(DType::Float32, DType::Float16, factor, sizes);
    check_convert(DType::Float32, DType::BFloat16, factor, sizes);
    check_convert(DType::Float16, DType::Float32, factor, sizes);
    check_convert(DType::BFloat16, DType::Float32, factor, sizes);
    check_convert(DType::Float64, DType::Float16, factor, sizes);
    check_convert(DType::Float16, DType::Float64, factor, sizes);
  }
}

TEST_CASE("GPU scaling copies match the CPU in every float dtype", "[gpu][kernels]") {
  for (DType d : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16})
    for (double factor : {1.0, 0.25, 1.0 / 3.0}) check_convert(d, d, factor, {5, 4096, 12345});
}

TEST_CASE("GPU copies of integers, and of many small tensors in one call", "[gpu][kernels]") {
  for (DType d : {DType::Int8, DType::UInt8, DType::Int32, DType::Int64}) check_convert(d, d, 1.0, {1, 1000, 3});
  std::vector<int64_t> many(200);  // 200 pieces: several launches of at most 64 each
  for (std::size_t i = 0; i < many.size(); ++i) many[i] = int64_t(i % 13) * 37 + 1;
  check_convert(DType::Float32, DType::Float32, 0.5, many);
  check_convert(DType::Float32, DType::Float16, 1.0, many);
}

TEST_CASE("a GPU event is reached once the work before it is done, and a stream can wait on it", "[gpu][events]") {
  auto ops = kolo::ops::cuda::make_cuda_ops(0);
  DeviceVector<float> data(std::vector<float>(1 << 22, 1.0f));
  const CopyPiece piece{data.data(), data.data(), 1 << 22};
  ops->convert({&piece, 1}, DType::Float32, DType::Float32, 2.0);
  auto done = ops->record();
  kolo::ops::wait_for(*done, std::chrono::seconds(60), "the scaling kernel");
  CHECK(done->query());
  CHECK(data.read()[(1 << 22) - 1] == 2.0f);
  cudaStream_t other = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking) == cudaSuccess);
  done->block_stream(other);
  CHECK(cudaStreamSynchronize(other) == cudaSuccess);
  cudaStreamDestroy(other);
}
