// Linear layers through cuBLAS. Row-major (rows×in) data is column-major (in×rows) to
// cuBLAS, so y = x·wᵀ is yᵀ = w·xᵀ with w transposed: (op(A)·op(B)) in column-major terms
// below. float32 computes strictly in float32 (PyTorch's default for matrix products, no
// TF32); in float16/bfloat16 precision x, w and dy are cast and cuBLAS accumulates and
// writes float32.
#include "models/cuda/cuda_kernels.h"
#include "models/cuda/cudnn_cublas_check.h"
#include "ops/cuda/device_guard.h"

namespace kolo::models::cuda {
namespace {

// A float32 operand as cuBLAS gets it: itself, or a reduced-precision copy.
struct Operand {
  const void* data;
  cudaDataType_t type;
  std::shared_ptr<void> copy;
};

Operand operand(DeviceContext& context, const float* data, int64_t count) {
  const DType dtype = context.precision.load();
  if (dtype == DType::Float32) return {data, CUDA_R_32F, nullptr};
  std::shared_ptr<void> copy = context.allocate(static_cast<std::size_t>(count) * dtype_size(dtype));
  launch::to_reduced(context.stream(), count, data, copy.get(), dtype);
  return {copy.get(), dtype == DType::Float16 ? CUDA_R_16F : CUDA_R_16BF, copy};
}

void gemm(DeviceContext& context, cublasOperation_t op_a, cublasOperation_t op_b, int64_t m, int64_t n, int64_t k,
          const Operand& a, int64_t lda, const Operand& b, int64_t ldb, float beta, float* c, int64_t ldc) {
  const float alpha = 1.0f;
  KOLO_CUBLAS_CHECK(cublasGemmEx(context.cublas(), op_a, op_b, int(m), int(n), int(k), &alpha, a.data, a.type, int(lda),
                                 b.data, b.type, int(ldb), &beta, c, CUDA_R_32F, int(ldc), CUBLAS_COMPUTE_32F,
                                 CUBLAS_GEMM_DEFAULT));
}

}  // namespace

void CudaKernels::linear_forward(int64_t rows, int64_t in, int64_t out, const float* x, const float* w, const float* b,
                                 float* y) {
  ops::cuda::DeviceGuard on(context_.index());
  const Operand wo = operand(context_, w, out * in), xo = operand(context_, x, rows * in);
  gemm(context_, CUBLAS_OP_T, CUBLAS_OP_N, out, rows, in, wo, in, xo, in, 0.0f, y, out);
  if (b != nullptr) launch::add_channel_bias(context_.stream(), rows, out, 1, y, b);
}

void CudaKernels::linear_backward(int64_t rows, int64_t in, int64_t out, const float* x, const float* w,
                                  const float* dy, float* dx, float* dw, float* db) {
  ops::cuda::DeviceGuard on(context_.index());
  const Operand dyo = operand(context_, dy, rows * out);
  // dw (out×in, += ) = dyᵀ·x: column-major dwᵀ (in×out) = x_cm (in×rows) · dy_cmᵀ.
  const Operand xo = operand(context_, x, rows * in);
  gemm(context_, CUBLAS_OP_N, CUBLAS_OP_T, in, out, rows, xo, in, dyo, out, 1.0f, dw, in);
  if (dx != nullptr) {  // dx (rows×in) = dy·w: column-major dxᵀ = w_cm (in×out) · dy_cm (out×rows)
    const Operand wo = operand(context_, w, out * in);
    gemm(context_, CUBLAS_OP_N, CUBLAS_OP_N, in, rows, out, wo, in, dyo, out, 0.0f, dx, in);
  }
  if (db != nullptr) add_channel_sums(rows, out, 1, dy, db);  // Σ over rows: a (rows, out, 1) tensor
}

}  // namespace kolo::models::cuda
