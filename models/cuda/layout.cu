// Casts to and from float16/bfloat16 that also transpose between NCHW (kolo's storage) and
// NHWC (channels-last, which cuDNN's tensor-core kernels often prefer): one tiled transpose
// of each sample's C × HW matrix. A block moves a 32×32 tile through shared memory, so that
// both the reads and the writes are coalesced; the conversions are elementwise.cu's.
#include "models/cuda/launchers.h"
#include "models/cuda/launch.cuh"
#include "models/cuda/reduced.cuh"

namespace kolo::models::cuda::launch {
namespace {

constexpr int kTile = 32;      // a tile is kTile × kTile elements
constexpr int kTileRows = 8;   // threads per block: kTile × kTileRows, each moving kTile / kTileRows

template <typename Out, bool Accumulate>
__device__ void store(Out* p, float v) {
  *p = from_float<Out>(v);
}
template <>
__device__ void store<float, false>(float* p, float v) {
  *p = v;
}
template <>
__device__ void store<float, true>(float* p, float v) {
  *p = *p + v;
}

// dst[b][j][i] = src[b][i][j] for b < batch, i < rows, j < cols (each matrix contiguous).
// Tile t of the batch covers rows [r0, r0 + 32) and columns [c0, c0 + 32) of matrix b; the
// loop over tiles depends on blockIdx only, so every thread of a block reaches the barriers.
template <typename In, typename Out, bool Accumulate>
__global__ void transpose_kernel(int64_t batch, int64_t rows, int64_t cols, const In* src, Out* dst) {
  __shared__ float tile[kTile][kTile + 1];  // + 1: the column reads hit 32 different banks
  const int64_t tile_rows = (rows + kTile - 1) / kTile, tile_cols = (cols + kTile - 1) / kTile;
  const int64_t per_matrix = tile_rows * tile_cols, tiles = batch * per_matrix;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int64_t b = t / per_matrix, in_matrix = t % per_matrix;
    const int64_t r0 = in_matrix / tile_cols * kTile, c0 = in_matrix % tile_cols * kTile;
    const In* s = src + b * rows * cols;
    Out* d = dst + b * rows * cols;
    // Read along a source row (threadIdx.x walks the columns j)...
    for (int k = threadIdx.y; k < kTile; k += kTileRows) {
      const int64_t i = r0 + k, j = c0 + threadIdx.x;
      if (i < rows && j < cols) tile[k][threadIdx.x] = to_float(s[i * cols + j]);
    }
    __syncthreads();
    // ...write along a destination row (threadIdx.x walks the source rows i).
    for (int k = threadIdx.y; k < kTile; k += kTileRows) {
      const int64_t i = r0 + threadIdx.x, j = c0 + k;
      if (i < rows && j < cols) store<Out, Accumulate>(d + j * rows + i, tile[threadIdx.x][k]);
    }
    __syncthreads();  // the tile is refilled by the next iteration
  }
}

template <typename In, typename Out, bool Accumulate>
void transpose(cudaStream_t s, int64_t batch, int64_t rows, int64_t cols, const In* src, Out* dst) {
  const int64_t tiles = batch * ((rows + kTile - 1) / kTile) * ((cols + kTile - 1) / kTile);
  const unsigned blocks = static_cast<unsigned>(std::clamp<int64_t>(tiles, 1, 65536));
  transpose_kernel<In, Out, Accumulate><<<blocks, dim3(kTile, kTileRows), 0, s>>>(batch, rows, cols, src, dst);
  KOLO_CHECK_LAUNCH();
}

template <typename T>
void from_nhwc(cudaStream_t s, int64_t n, int64_t c, int64_t hw, const T* src, float* dst, bool accumulate) {
  // Source matrices are hw × c, destination ones c × hw.
  if (accumulate) transpose<T, float, true>(s, n, hw, c, src, dst);
  else transpose<T, float, false>(s, n, hw, c, src, dst);
}

}  // namespace

void to_reduced_nhwc(cudaStream_t s, int64_t n, int64_t c, int64_t hw, const float* src, void* dst, DType reduced) {
  check_reduced(reduced);
  if (n * c * hw == 0) return;
  // Source matrices are c × hw, destination ones hw × c.
  if (reduced == DType::Float16) transpose<float, __half, false>(s, n, c, hw, src, static_cast<__half*>(dst));
  else transpose<float, __nv_bfloat16, false>(s, n, c, hw, src, static_cast<__nv_bfloat16*>(dst));
}

void from_reduced_nhwc(cudaStream_t s, int64_t n, int64_t c, int64_t hw, const void* src, DType reduced, float* dst,
                       bool accumulate) {
  check_reduced(reduced);
  if (n * c * hw == 0) return;
  if (reduced == DType::Float16) from_nhwc(s, n, c, hw, static_cast<const __half*>(src), dst, accumulate);
  else from_nhwc(s, n, c, hw, static_cast<const __nv_bfloat16*>(src), dst, accumulate);
}

}  // namespace kolo::models::cuda::launch
