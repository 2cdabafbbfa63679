// kolo_gpu_allreduce_benchmark: what kolo's GPU path costs over raw NCCL and cudaMemcpy, on the
// same GPU in the same run (docs/perf.md).
//
//   mpirun -np 1 build/bench/allreduce/kolo_gpu_allreduce_benchmark [--reps 20]
//
// 1. Allreduce of torchvision ResNet-50's gradient set (161 tensors, 25.6 M float32) on
//    the GPU: kolo (submit all 161 in backprop order, then wait; negotiation, fusion
//    kernels, NCCL) against one ncclAllReduce on a flat buffer of the same size.
// 2. The fusion buffer's copy-in kernel (161 tensors into one buffer, one launch per 64
//    tensors) against one cudaMemcpyAsync of the same bytes (the device's copy speed) and
//    against 161 cudaMemcpyAsync calls (one per tensor).
// Times are medians over --reps; each line ends with the ratio to its baseline.
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "kolo/kolo.h"
#include "ops/cuda/cuda_device.h"
#include "ops/device.h"
#include "resnet50_gradients.h"

namespace {

using Clock = std::chrono::steady_clock;

void cuda_ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "kolo_gpu_allreduce_benchmark: %s: %s\n", what, cudaGetErrorString(e));
  std::exit(2);
}

void nccl_ok(ncclResult_t e, const char* what) {
  if (e == ncclSuccess) return;
  std::fprintf(stderr, "kolo_gpu_allreduce_benchmark: %s: %s\n", what, ncclGetErrorString(e));
  std::exit(2);
}

// Median milliseconds of `reps` runs of `body` (after two warm-up runs), slowest rank's.
double median_ms(int reps, const std::function<void()>& body) {
  for (int i = 0; i < 2; ++i) body();
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto start = Clock::now();
    body();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  double median = ms[ms.size() / 2];
  MPI_Allreduce(MPI_IN_PLACE, &median, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return median;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 20;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
    else {
      std::fprintf(stderr, "usage: %s [--reps N]\n", argv[0]);
      return 1;
    }
  }
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "kolo_gpu_allreduce_benchmark: no CUDA device\n");
    MPI_Finalize();
    return 77;
  }
  kolo::init();
  const int rank = kolo::rank(), size = kolo::size();
  const int device = kolo::local_rank() % devices;
  cuda_ok(cudaSetDevice(device), "cudaSetDevice");
  cudaDeviceProp prop{};
  cuda_ok(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");

  const std::vector<GradientTensor> grads = resnet50_gradients_backprop_order();
  int64_t total = 0;
  for (const auto& g : grads) total += g.elements();
  const std::size_t total_bytes = static_cast<std::size_t>(total) * sizeof(float);

  // One device buffer per gradient, and one flat buffer of them all.
  std::vector<void*> tensors;
  const std::vector<float> ones(static_cast<std::size_t>(total), 1.0f);
  int64_t at = 0;
  for (const auto& g : grads) {
    void* p = nullptr;
    cuda_ok(cudaMalloc(&p, static_cast<std::size_t>(g.elements()) * sizeof(float)), "cudaMalloc");
    cuda_ok(cudaMemcpy(p, ones.data() + at, static_cast<std::size_t>(g.elements()) * sizeof(float),
                       cudaMemcpyHostToDevice), "cudaMemcpy");
    tensors.push_back(p);
    at += g.elements();
  }
  void* flat = nullptr;
  cuda_ok(cudaMalloc(&flat, total_bytes), "cudaMalloc (flat)");
  cudaStream_t stream = nullptr;
  cuda_ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");

  // ---- 1. allreduce -----------------------------------------------------------------------
  const double kolo_ms = median_ms(reps, [&] {
    std::vector<kolo::Handle> handles;
    for (std::size_t i = 0; i < grads.size(); ++i)
      handles.push_back(kolo::allreduce_async(
          "resnet50/" + grads[i].name,
          kolo::TensorView{tensors[i], kolo::DType::Float32, grads[i].shape, kolo::Device::cuda(device)},
          {kolo::ReduceOp::Sum}));
    for (const auto& h : handles) h.wait().throw_if_error();
  });

  ncclUniqueId id{};
  if (rank == 0) nccl_ok(ncclGetUniqueId(&id), "ncclGetUniqueId");
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm = nullptr;
  nccl_ok(ncclCommInitRank(&comm, size, id, rank), "ncclCommInitRank");
  const double nccl_ms = median_ms(reps, [&] {
    nccl_ok(ncclAllReduce(flat, flat, static_cast<size_t>(total), ncclFloat32, ncclSum, comm, stream), "ncclAllReduce");
    cuda_ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  });

  // ---- 2. copy kernels ---------------------------------------------------------------------
  auto ops = kolo::ops::cuda::make_cuda_ops(device);
  std::vector<kolo::ops::CopyPiece> pieces;
  at = 0;
  for (std::size_t i = 0; i < grads.size(); ++i) {
    pieces.push_back({static_cast<float*>(flat) + at, tensors[i], grads[i].elements()});
    at += grads[i].elements();
  }
  const double kernel_ms = median_ms(reps, [&] {
    ops->convert(pieces, kolo::DType::Float32, kolo::DType::Float32, 1.0);
    kolo::ops::wait_for(*ops->record(), std::chrono::seconds(60), "the copy kernel");
  });
  const double kernel_scaled_ms = median_ms(reps, [&] {
    ops->convert(pieces, kolo::DType::Float32, kolo::DType::Float32, 0.5);
    kolo::ops::wait_for(*ops->record(), std::chrono::seconds(60), "the copy kernel");
  });
  void* second = nullptr;
  cuda_ok(cudaMalloc(&second, total_bytes), "cudaMalloc (second flat)");
  const double memcpy_ms = median_ms(reps, [&] {
    cuda_ok(cudaMemcpyAsync(second, flat, total_bytes, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync");
    cuda_ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  });
  const double memcpy_each_ms = median_ms(reps, [&] {
    for (const auto& p : pieces)
      cuda_ok(cudaMemcpyAsync(p.dst, p.src, static_cast<std::size_t>(p.count) * sizeof(float),
                              cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync");
    cuda_ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  });

  if (rank == 0) {
    const double gb = double(total_bytes) / 1e9;
    std::printf("device: %s, %d rank(s), %s\n", prop.name, size, kolo::describe_configuration().c_str());
    std::printf("ResNet-50 gradient set: %zu tensors, %lld float32 (%.1f MB), median of %d\n", grads.size(),
                static_cast<long long>(total), gb * 1e3, reps);
    std::printf("allreduce  ncclAllReduce flat buffer     %8.3f ms\n", nccl_ms);
    std::printf("allreduce  kolo, 161 tensors             %8.3f ms   kolo / nccl = %.3f\n", kolo_ms, kolo_ms / nccl_ms);
    std::printf("copy       cudaMemcpyAsync D2D, one call %8.3f ms  %7.1f GB/s\n", memcpy_ms, gb / (memcpy_ms / 1e3));
    std::printf("copy       cudaMemcpyAsync x 161         %8.3f ms  %7.1f GB/s   / one call = %.3f\n", memcpy_each_ms,
                gb / (memcpy_each_ms / 1e3), memcpy_each_ms / memcpy_ms);
    std::printf("copy       kolo batched copy-in kernel   %8.3f ms  %7.1f GB/s   / one call = %.3f\n", kernel_ms,
                gb / (kernel_ms / 1e3), kernel_ms / memcpy_ms);
    std::printf("copy       kolo kernel with scaling      %8.3f ms  %7.1f GB/s   / one call = %.3f\n", kernel_scaled_ms,
                gb / (kernel_scaled_ms / 1e3), kernel_scaled_ms / memcpy_ms);
  }

  ops.reset();
  ncclCommDestroy(comm);
  for (void* p : tensors) cudaFree(p);
  cudaFree(flat);
  cudaFree(second);
  cudaStreamDestroy(stream);
  kolo::shutdown();
  MPI_Finalize();
  return 0;
}
