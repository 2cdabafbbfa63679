// The model layer on a GPU: which devices exist, the stream kolo computes on, memory
// statistics and the precision of convolutions and matrix products. Part of kolo/models.h.
//
//   if (kolo::models::cuda_device_count() > 0) {
//     const kolo::Device gpu = kolo::Device::cuda(0);
//     net->to(gpu);                                  // parameters, gradients, buffers
//     Tensor logits = net->forward(images.to(gpu));  // layers run where their input is
//   }
//
// Every kernel of a device runs in order on one CUDA stream per device (compute_stream);
// the host waits only where it reads a value (the loss, to(Device::cpu())). See
// docs/gpu-models.md, including what has not run on a GPU yet.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kolo/kolo.h"

namespace kolo::models {

// Visible CUDA devices; 0 without a driver, a device, or a build with CUDA.
int cuda_device_count();

// The cudaStream_t the model layer enqueues its work for `device` on (created on first
// use). Hand it to kolo::set_cuda_stream so that the runtime's events for gradients are
// recorded after the kernels that produced them. Throws kolo::Error for the CPU.
void* compute_stream(Device device);

// Waits until the work enqueued for `device` is done (nothing for the CPU). Throws
// kolo::Error if the device reported an error, or after `timeout_seconds`.
void synchronize(Device device, double timeout_seconds = 600);

// The caching allocator of a GPU (PyTorch's torch.cuda.memory_stats counterparts).
struct GpuMemoryStats {
  std::size_t in_use_bytes = 0;       // memory_allocated()
  std::size_t peak_in_use_bytes = 0;  // max_memory_allocated()
  std::size_t reserved_bytes = 0;     // memory_reserved()
  std::size_t peak_reserved_bytes = 0;
  std::size_t cached_bytes = 0;       // reserved, free for reuse
  int64_t device_allocations = 0;     // cudaMalloc calls so far
};
GpuMemoryStats gpu_memory_stats(Device device);
void reset_peak_gpu_memory(Device device);
void release_cached_gpu_memory(Device device);  // torch.cuda.empty_cache()

// The element type convolutions and linear layers compute in on `device` (mixed precision):
// Float32 (default; cuDNN may use TF32 tensor cores, as PyTorch does by default), Float16
// or BFloat16 (inputs and weights are cast per operation, products accumulate in float32,
// results and gradients are stored as float32: fp32 master weights). Pair Float16 with a
// LossScaler. Throws kolo::Error for the CPU or another dtype.
void set_compute_precision(Device device, DType dtype);
DType compute_precision(Device device);
// Whether float32 convolutions may use TF32 tensor cores (10-bit mantissa products, float32
// accumulation): true by default, as torch.backends.cudnn.allow_tf32. Matrix products
// (Linear) never do, as PyTorch's default. kolo-parity turns it off to compare with
// PyTorch's float32 reference on the CPU. Throws kolo::Error for the CPU.
void set_allow_tf32(Device device, bool allow);
// Channels-last (NHWC) for float16/bfloat16 convolutions, whose operands are cast into
// temporary buffers anyway (the casts then also transpose, and the results come back to
// NCHW): Auto (default) measures both layouts once per convolution shape and pass, casts
// included, and keeps the faster; Never and Always force one (to compare them). Float32
// convolutions stay NCHW. Throws kolo::Error for the CPU.
enum class ChannelsLast : int { Auto, Never, Always };
void set_channels_last(Device device, ChannelsLast mode);

}  // namespace kolo::models
