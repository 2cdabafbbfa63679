// Memory for "device" tensors in the GPU-path tests. Built with KOLO_TEST_REAL_GPU (the
// kolo_collective_gpu_tests binary) it is CUDA device memory on cuda:0; otherwise it is host memory
// marked cuda:0, for runs with KOLO_TEST_HOST_GPU=1 where host memory stands in for the
// device. The same test cases thus check the runtime's GPU path here and on a real GPU.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "kolo/kolo.h"

#ifdef KOLO_TEST_REAL_GPU
#include <cuda_runtime_api.h>
#endif

namespace kolo_test {

inline const kolo::Device kTestGpu = kolo::Device::cuda(0);

#ifdef KOLO_TEST_REAL_GPU
inline void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
#endif

// Copies `bytes` from a "device" pointer (a result kolo allocated, say) to the host.
inline void copy_from_device(void* host, const void* device, std::size_t bytes) {
  if (bytes == 0) return;
#ifdef KOLO_TEST_REAL_GPU
  cuda_ok(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy (to host)");
#else
  std::memcpy(host, device, bytes);
#endif
}

template <typename T>
std::vector<T> read_device(const void* device, std::size_t count) {
  std::vector<T> host(count);
  copy_from_device(host.data(), device, count * sizeof(T));
  return host;
}

// A device copy of a host vector; read() copies it back.
template <typename T>
class DeviceVector {
 public:
  explicit DeviceVector(const std::vector<T>& host) : count_(host.size()) {
#ifdef KOLO_TEST_REAL_GPU
    cuda_ok(cudaMalloc(&data_, std::max<std::size_t>(bytes(), 1)), "cudaMalloc");
    cuda_ok(cudaMemcpy(data_, host.data(), bytes(), cudaMemcpyHostToDevice), "cudaMemcpy (to device)");
#else
    host_ = host;
    data_ = host_.data();
#endif
  }
  ~DeviceVector() {
#ifdef KOLO_TEST_REAL_GPU
    (void)cudaFree(data_);
#endif
  }
  DeviceVector(const DeviceVector&) = delete;
  DeviceVector& operator=(const DeviceVector&) = delete;

  kolo::TensorView view(std::vector<int64_t> shape = {}) {
    if (shape.empty()) shape = {static_cast<int64_t>(count_)};
    return kolo::TensorView{data_, dtype(), std::move(shape), kTestGpu};
  }
  std::vector<T> read() const { return read_device<T>(data_, count_); }
  void* data() { return data_; }

 private:
  std::size_t bytes() const { return count_ * sizeof(T); }
  static kolo::DType dtype() {
    if constexpr (std::is_same_v<T, std::byte>) return kolo::DType::UInt8;
    else return kolo::dtype_of<T>();
  }

  std::size_t count_;
  void* data_ = nullptr;
#ifndef KOLO_TEST_REAL_GPU
  std::vector<T> host_;
#endif
};

}  // namespace kolo_test
