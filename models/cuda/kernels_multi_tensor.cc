// Multi-tensor passes: the optimizers' updates and the loss scaler's unscale-and-check, one
// kernel launch each for all parameters. Tensors are cut into chunks of kChunk elements;
// the tables go to the GPU once and are reused while the same tensors come back (every
// training step after the first).
#include <cstring>

#include "models/cuda/cuda_kernels.h"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/device_guard.h"

namespace kolo::models::cuda {
namespace {

constexpr int64_t kChunk = 65536;

bool same_slots(const std::vector<launch::TensorSlot>& a, const std::vector<launch::TensorSlot>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].a != b[i].a || a[i].g != b[i].g || a[i].s1 != b[i].s1 || a[i].s2 != b[i].s2 || a[i].count != b[i].count)
      return false;
  return true;
}

std::vector<launch::TensorSlot> slots_of(std::span<const Kernels::UpdateTensors> tensors) {
  std::vector<launch::TensorSlot> slots;
  for (const Kernels::UpdateTensors& t : tensors) slots.push_back({t.param, t.grad, t.state1, t.state2, t.count});
  return slots;
}

}  // namespace

CudaKernels::MultiTensorTable& CudaKernels::table(MultiTensorTable& cache, std::vector<launch::TensorSlot> slots) {
  if (cache.device_slots && same_slots(cache.slots, slots)) return cache;
  std::vector<launch::Chunk> chunks;
  for (std::size_t i = 0; i < slots.size(); ++i)
    for (int64_t begin = 0; begin < slots[i].count; begin += kChunk)
      chunks.push_back({static_cast<int32_t>(i), begin, std::min(slots[i].count, begin + kChunk)});
  const std::size_t slot_bytes = slots.size() * sizeof(launch::TensorSlot);
  const std::size_t chunk_bytes = chunks.size() * sizeof(launch::Chunk);
  cache.device_slots = context_.allocate(slot_bytes);
  cache.device_chunks = context_.allocate(chunk_bytes);
  context_.copy_to_device(cache.device_slots.get(), slots.data(), slot_bytes);
  context_.copy_to_device(cache.device_chunks.get(), chunks.data(), chunk_bytes);
  cache.slots = std::move(slots);
  cache.chunks = std::move(chunks);
  return cache;
}

void CudaKernels::update(MultiTensorTable& cache, std::span<const UpdateTensors> tensors,
                         const MultiTensorLaunch& launch) {
  ops::cuda::DeviceGuard on(context_.index());
  std::lock_guard<std::mutex> lock(tables_mutex_);
  MultiTensorTable& t = table(cache, slots_of(tensors));
  launch(context_.stream(), static_cast<const launch::TensorSlot*>(t.device_slots.get()),
         static_cast<const launch::Chunk*>(t.device_chunks.get()), static_cast<int64_t>(t.chunks.size()));
}

void CudaKernels::sgd_step(std::span<const UpdateTensors> tensors, const SgdStep& step) {
  update(sgd_table_, tensors, [&](cudaStream_t s, const launch::TensorSlot* slots, const launch::Chunk* chunks,
                                  int64_t count) { launch::sgd_step(s, slots, chunks, count, step); });
}

void CudaKernels::adam_step(std::span<const UpdateTensors> tensors, const AdamStep& step) {
  update(adam_table_, tensors, [&](cudaStream_t s, const launch::TensorSlot* slots, const launch::Chunk* chunks,
                                   int64_t count) { launch::adam_step(s, slots, chunks, count, step); });
}

void CudaKernels::adadelta_step(std::span<const UpdateTensors> tensors, const AdadeltaStep& step) {
  update(adadelta_table_, tensors, [&](cudaStream_t s, const launch::TensorSlot* slots, const launch::Chunk* chunks,
                                       int64_t count) { launch::adadelta_step(s, slots, chunks, count, step); });
}

bool CudaKernels::unscale_and_check(std::span<float* const> tensors, std::span<const int64_t> counts,
                                    float inv_scale) {
  ops::cuda::DeviceGuard on(context_.index());
  std::vector<launch::TensorSlot> slots;
  for (std::size_t i = 0; i < tensors.size(); ++i) slots.push_back({tensors[i], nullptr, nullptr, nullptr, counts[i]});
  auto flag = context_.allocate(sizeof(int32_t));
  int32_t* found = static_cast<int32_t*>(flag.get());
  KOLO_CUDA_CHECK(cudaMemsetAsync(found, 0, sizeof(int32_t), context_.stream()));
  {
    std::lock_guard<std::mutex> lock(tables_mutex_);
    MultiTensorTable& t = table(unscale_table_, std::move(slots));
    launch::unscale_and_check(context_.stream(), static_cast<const launch::TensorSlot*>(t.device_slots.get()),
                               static_cast<const launch::Chunk*>(t.device_chunks.get()),
                               static_cast<int64_t>(t.chunks.size()), inv_scale, found);
  }
  int32_t host = 0;
  context_.copy_to_host(&host, found, sizeof host);
  return host != 0;
}

}  // namespace kolo::models::cuda
