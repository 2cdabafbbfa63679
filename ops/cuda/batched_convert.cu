#include "batched_convert.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace kolo::ops::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kPerThread = 8;
constexpr int64_t kBlockElements = int64_t{kThreads} * kPerThread;

// Blocks are dealt out to the pieces in proportion to their size (first_block is the
// running total), so a batch of one large and many small tensors keeps every SM busy.
struct Batch {
  KernelPiece pieces[kMaxPiecesPerLaunch];
  int64_t first_block[kMaxPiecesPerLaunch + 1];
  int count;
};

// kolo::DType values.
enum Code { kFloat32 = 0, kFloat64 = 1, kFloat16 = 2, kBFloat16 = 3, kInt8 = 4, kUInt8 = 5, kInt32 = 6, kInt64 = 7,
            kInt16 = 8 };

template <typename T> struct Num;
template <> struct Num<float> {
  __device__ static float load(float x) { return x; }
  __device__ static float store(float x) { return x; }
};
template <> struct Num<double> {
  __device__ static double load(double x) { return x; }
  __device__ static double store(double x) { return x; }
};
template <> struct Num<__half> {
  __device__ static float load(__half x) { return __half2float(x); }
  __device__ static __half store(float x) { return __float2half_rn(x); }
};
template <> struct Num<__nv_bfloat16> {
  __device__ static float load(__nv_bfloat16 x) { return __bfloat162float(x); }
  __device__ static __nv_bfloat16 store(float x) { return __float2bfloat16_rn(x); }
};

// Integers are scaled in double and truncated toward zero, saturating at the type's
// limits, as ops::scale does on the host (Horovod's rule).
template <typename T>
struct IntNum {
  // Constants, not calls: numeric_limits' functions are host code.
  static constexpr T kLowest = std::numeric_limits<T>::lowest();
  static constexpr T kMax = std::numeric_limits<T>::max();
  static constexpr double kAboveMax = static_cast<double>(kMax) + 1.0;  // int64: 2^63 either way
  __device__ static double load(T x) { return static_cast<double>(x); }
  __device__ static T store(double x) {
    if (isnan(x)) return T{0};
    if (x >= kAboveMax) return kMax;
    if (x <= static_cast<double>(kLowest)) return kLowest;
    return static_cast<T>(x);
  }
};
template <> struct Num<int8_t> : IntNum<int8_t> {};
template <> struct Num<uint8_t> : IntNum<uint8_t> {};
template <> struct Num<int16_t> : IntNum<int16_t> {};
template <> struct Num<int32_t> : IntNum<int32_t> {};
template <> struct Num<int64_t> : IntNum<int64_t> {};

__device__ int piece_of_block(const Batch& batch, int64_t block) {
  int lo = 0, hi = batch.count - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (batch.first_block[mid] <= block) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

template <typename From, typename To>
__global__ void convert_kernel(const __grid_constant__ Batch batch, double factor) {
  using Math = std::conditional_t<(std::is_same_v<From, double> && std::is_same_v<To, double>) ||
                                       std::is_integral_v<From>,
                                   double, float>;
  const int64_t block = blockIdx.x;
  const int p = piece_of_block(batch, block);
  const KernelPiece piece = batch.pieces[p];
  To* dst = static_cast<To*>(piece.dst);
  const From* src = static_cast<const From*>(piece.src);
  const Math f = static_cast<Math>(factor);
  const int64_t start = (block - batch.first_block[p]) * kBlockElements + threadIdx.x;
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const int64_t i = start + int64_t{k} * kThreads;
    if (i >= piece.count) break;
    dst[i] = src == nullptr ? Num<To>::store(Math(0)) : Num<To>::store(static_cast<Math>(Num<From>::load(src[i])) * f);
  }
}

// Same dtype, factor 1: a copy of raw words of the element's size.
template <typename Word>
__global__ void copy_kernel(const __grid_constant__ Batch batch) {
  const int64_t block = blockIdx.x;
  const int p = piece_of_block(batch, block);
  const KernelPiece piece = batch.pieces[p];
  Word* dst = static_cast<Word*>(piece.dst);
  const Word* src = static_cast<const Word*>(piece.src);
  const int64_t start = (block - batch.first_block[p]) * kBlockElements + threadIdx.x;
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const int64_t i = start + int64_t{k} * kThreads;
    if (i >= piece.count) break;
    dst[i] = src == nullptr ? Word{} : src[i];
  }
}

int element_size(int code) {
  switch (code) {
    case kFloat64: case kInt64: return 8;
    case kFloat32: case kInt32: return 4;
    case kFloat16: case kBFloat16: case kInt16: return 2;
    default: return 1;
  }
}

template <typename From, typename To>
void launch(const Batch& batch, int64_t blocks, double factor, cudaStream_t stream) {
  convert_kernel<From, To><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(batch, factor);
}

template <typename From>
cudaError_t launch_from(int to, const Batch& batch, int64_t blocks, double factor, cudaStream_t stream) {
  switch (to) {
    case kFloat32: launch<From, float>(batch, blocks, factor, stream); break;
    case kFloat64: launch<From, double>(batch, blocks, factor, stream); break;
    case kFloat16: launch<From, __half>(batch, blocks, factor, stream); break;
    case kBFloat16: launch<From, __nv_bfloat16>(batch, blocks, factor, stream); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launch_copy(int size, const Batch& batch, int64_t blocks, cudaStream_t stream) {
  const unsigned grid = static_cast<unsigned>(blocks);
  switch (size) {
    case 8: copy_kernel<unsigned long long><<<grid, kThreads, 0, stream>>>(batch); break;
    case 4: copy_kernel<unsigned int><<<grid, kThreads, 0, stream>>>(batch); break;
    case 2: copy_kernel<unsigned short><<<grid, kThreads, 0, stream>>>(batch); break;
    default: copy_kernel<unsigned char><<<grid, kThreads, 0, stream>>>(batch); break;
  }
  return cudaGetLastError();
}

bool is_float(int code) { return code == kFloat32 || code == kFloat64 || code == kFloat16 || code == kBFloat16; }

// An integer tensor scaled into itself (an average, a pre/postscale).
cudaError_t launch_scale_integer(int code, const Batch& batch, int64_t blocks, double factor, cudaStream_t stream) {
  switch (code) {
    case kInt8: launch<int8_t, int8_t>(batch, blocks, factor, stream); break;
    case kUInt8: launch<uint8_t, uint8_t>(batch, blocks, factor, stream); break;
    case kInt16: launch<int16_t, int16_t>(batch, blocks, factor, stream); break;
    case kInt32: launch<int32_t, int32_t>(batch, blocks, factor, stream); break;
    case kInt64: launch<int64_t, int64_t>(batch, blocks, factor, stream); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_convert(const KernelPiece* pieces, int count, int from, int to, double factor,
                           cudaStream_t stream) {
  const bool copy = from == to && factor == 1.0;
  const bool scale_integer = from == to && !is_float(from) && !copy;
  if (!copy && !scale_integer && !(is_float(from) && is_float(to))) return cudaErrorInvalidValue;
  for (int begin = 0; begin < count; begin += kMaxPiecesPerLaunch) {
    Batch batch{};
    int64_t blocks = 0;
    for (int i = begin; i < std::min(count, begin + kMaxPiecesPerLaunch); ++i) {
      if (pieces[i].count <= 0) continue;
      batch.pieces[batch.count] = pieces[i];
      batch.first_block[batch.count] = blocks;
      blocks += (pieces[i].count + kBlockElements - 1) / kBlockElements;
      ++batch.count;
    }
    if (batch.count == 0) continue;
    batch.first_block[batch.count] = blocks;
    cudaError_t error;
    if (copy) {
      error = launch_copy(element_size(from), batch, blocks, stream);
    } else if (scale_integer) {
      error = launch_scale_integer(from, batch, blocks, factor, stream);
    } else {
      switch (from) {
        case kFloat32: error = launch_from<float>(to, batch, blocks, factor, stream); break;
        case kFloat64: error = launch_from<double>(to, batch, blocks, factor, stream); break;
        case kFloat16: error = launch_from<__half>(to, batch, blocks, factor, stream); break;
        default: error = launch_from<__nv_bfloat16>(to, batch, blocks, factor, stream); break;
      }
    }
    if (error != cudaSuccess) return error;
  }
  return cudaSuccess;
}

}  // namespace kolo::ops::cuda
