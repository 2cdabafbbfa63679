// The CUDA backend's one-kernel operations: ReLU, residual adds, pooling, padding, scaling,
// elementwise products.
#include "models/cuda/cuda_backend.h"
#include "models/cuda/device_guard.h"

namespace kolo::models::cuda {

// 512 MiB of workspace at most for one convolution: what the fastest algorithms of
// ResNet-50/152 at batch 256 ask for, with room to spare on a 40-80 GB GPU.
CudaBackend::CudaBackend(DeviceContext& context) : context_(context), algorithms_(std::size_t{512} << 20) {}

void CudaBackend::relu_forward(int64_t count, float* x) {
  DeviceGuard on(context_.index());
  kernels::relu_forward(context_.stream(), count, x);
}

void CudaBackend::relu_backward(int64_t count, const float* y, const float* dy, float* dx) {
  DeviceGuard on(context_.index());
  kernels::relu_backward(context_.stream(), count, y, dy, dx);
}

void CudaBackend::add_into(int64_t count, float* a, const float* b) {
  DeviceGuard on(context_.index());
  kernels::add_into(context_.stream(), count, a, b);
}

void CudaBackend::scale(int64_t count, float* x, float factor) {
  DeviceGuard on(context_.index());
  kernels::scale(context_.stream(), count, x, factor);
}

void CudaBackend::multiply(int64_t count, const float* a, const float* b, float* out) {
  DeviceGuard on(context_.index());
  kernels::multiply(context_.stream(), count, a, b, out);
}

void CudaBackend::maxpool_forward(const PoolShape& s, const float* x, float* y, int32_t* argmax) {
  DeviceGuard on(context_.index());
  kernels::maxpool_forward(context_.stream(), s, x, y, argmax);
}

void CudaBackend::maxpool_backward(const PoolShape& s, const float* dy, const int32_t* argmax, float* dx) {
  DeviceGuard on(context_.index());
  kernels::maxpool_backward(context_.stream(), s, dy, argmax, dx);
}

void CudaBackend::global_avg_pool_forward(int64_t planes, int64_t hw, const float* x, float* y) {
  DeviceGuard on(context_.index());
  kernels::global_avg_pool_forward(context_.stream(), planes, hw, x, y);
}

void CudaBackend::global_avg_pool_backward(int64_t planes, int64_t hw, const float* dy, float* dx) {
  DeviceGuard on(context_.index());
  kernels::global_avg_pool_backward(context_.stream(), planes, hw, dy, dx);
}

void CudaBackend::zero_pad_forward(int64_t planes, int64_t h, int64_t w, int64_t pad, const float* x, float* y) {
  DeviceGuard on(context_.index());
  kernels::zero_pad_forward(context_.stream(), planes, h, w, pad, x, y);
}

void CudaBackend::zero_pad_backward(int64_t planes, int64_t h, int64_t w, int64_t pad, const float* dy, float* dx) {
  DeviceGuard on(context_.index());
  kernels::zero_pad_backward(context_.stream(), planes, h, w, pad, dy, dx);
}

}  // namespace kolo::models::cuda
