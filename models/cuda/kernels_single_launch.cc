// CudaKernels' one-launch operations: ReLU, residual adds, pooling, padding, scaling,
// elementwise products.
#include "models/cuda/cuda_kernels.h"
#include "ops/cuda/device_guard.h"

namespace kolo::models::cuda {

// 512 MiB of workspace at most for one convolution: what the fastest algorithms of
// ResNet-50/152 at batch 256 ask for, with room to spare on a 40-80 GB GPU.
CudaKernels::CudaKernels(DeviceContext& context) : context_(context), algorithms_(std::size_t{512} << 20) {}

void CudaKernels::relu_forward(int64_t count, float* x) {
  ops::cuda::DeviceGuard on(context_.index());
  launch::relu_forward(context_.stream(), count, x);
}

void CudaKernels::relu_backward(int64_t count, const float* y, const float* dy, float* dx) {
  ops::cuda::DeviceGuard on(context_.index());
  launch::relu_backward(context_.stream(), count, y, dy, dx);
}

void CudaKernels::add_into(int64_t count, float* a, const float* b) {
  ops::cuda::DeviceGuard on(context_.index());
  launch::add_into(context_.stream(), count, a, b);
}

void CudaKernels::scale(int64_t count, float* x, float factor) {
  ops::cuda::DeviceGuard on(context_.index());
  launch::scale(context_.stream(), count, x, factor);
}

void CudaKernels::multiply(int64_t count, const float* a, const float* b, float* out) {
  ops::cuda::DeviceGuard on(context_.index());
  launch::multiply(context_.stream(), count, a, b, out);
}

void CudaKernels::maxpool_forward(const PoolShape& s, const float* x, float* y, int32_t* argmax) {
  ops::cuda::DeviceGuard on(context_.index());
  launch::maxpool_forward(context_.stream(), s, x, y, argmax);
}

void CudaKernels::maxpool_backward(const PoolShape& s, const float* dy, const int32_t* argmax, float* dx) {
  ops::cuda::DeviceGuard on(context_.index());
  launch::maxpool_backward(context_.stream(), s, dy, argmax, dx);
}

void CudaKernels::global_avg_pool_forward(int64_t planes, int64_t hw, const float* x, float* y) {
  ops::cuda::DeviceGuard on(context_.index());
  launch::global_avg_pool_forward(context_.stream(), planes, hw, x, y);
}

void CudaKernels::global_avg_pool_backward(int64_t planes, int64_t hw, const float* dy, float* dx) {
  ops::cuda::DeviceGuard on(context_.index());
  launch::global_avg_pool_backward(context_.stream(), planes, hw, dy, dx);
}

void CudaKernels::zero_pad_forward(int64_t planes, int64_t h, int64_t w, int64_t pad, const float* x, float* y) {
  ops::cuda::DeviceGuard on(context_.index());
  launch::zero_pad_forward(context_.stream(), planes, h, w, pad, x, y);
}

void CudaKernels::zero_pad_backward(int64_t planes, int64_t h, int64_t w, int64_t pad, const float* dy, float* dx) {
  ops::cuda::DeviceGuard on(context_.index());
  launch::zero_pad_backward(context_.stream(), planes, h, w, pad, dy, dx);
}

}  // namespace kolo::models::cuda
