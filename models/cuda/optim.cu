// Multi-tensor kernels: one launch updates every parameter. The host lists the tensors and
// cuts them into chunks (kernels_multi_tensor.cc); block b works on chunk b. The update
// rules are models/kernels.h's (the CPU's in models/cpu/optimizer_steps.cc), element by
// element in float32.
#include "models/cuda/launchers.h"
#include "models/cuda/launch.cuh"

namespace kolo::models::cuda::launch {
namespace {

__global__ void sgd_kernel(const TensorSlot* slots, const Chunk* chunks, Kernels::SgdStep step) {
  const Chunk chunk = chunks[blockIdx.x];
  const TensorSlot t = slots[chunk.tensor];
  for (int64_t j = chunk.begin + threadIdx.x; j < chunk.end; j += blockDim.x) {
    float d = t.g[j];
    if (step.weight_decay != 0) d = d + step.weight_decay * t.a[j];
    if (t.s1 != nullptr) {
      const float buf = step.first ? d : t.s1[j] * step.momentum + step.keep * d;
      t.s1[j] = buf;
      d = step.nesterov ? d + step.momentum * buf : buf;
    }
    t.a[j] = t.a[j] + step.neg_lr * d;
  }
}

__global__ void adam_kernel(const TensorSlot* slots, const Chunk* chunks, Kernels::AdamStep step) {
  const Chunk chunk = chunks[blockIdx.x];
  const TensorSlot t = slots[chunk.tensor];
  for (int64_t j = chunk.begin + threadIdx.x; j < chunk.end; j += blockDim.x) {
    float grad = t.g[j];
    if (step.weight_decay != 0) grad = grad + step.weight_decay * t.a[j];
    const float m = t.s1[j] * step.beta1 + step.one_minus_beta1 * grad;
    const float v = t.s2[j] * step.beta2 + step.one_minus_beta2 * grad * grad;
    t.s1[j] = m;
    t.s2[j] = v;
    const float denom = sqrtf(v) / step.bias_correction2_sqrt + step.eps;
    t.a[j] = t.a[j] + step.neg_step_size * m / denom;
  }
}

__global__ void adadelta_kernel(const TensorSlot* slots, const Chunk* chunks, Kernels::AdadeltaStep step) {
  const Chunk chunk = chunks[blockIdx.x];
  const TensorSlot t = slots[chunk.tensor];
  for (int64_t j = chunk.begin + threadIdx.x; j < chunk.end; j += blockDim.x) {
    float grad = t.g[j];
    if (step.weight_decay != 0) grad = grad + step.weight_decay * t.a[j];
    const float square_avg = t.s1[j] * step.rho + step.one_minus_rho * grad * grad;
    t.s1[j] = square_avg;
    const float std_dev = sqrtf(square_avg + step.eps);
    const float delta = sqrtf(t.s2[j] + step.eps) / std_dev * grad;
    t.s2[j] = t.s2[j] * step.rho + step.one_minus_rho * delta * delta;
    t.a[j] = t.a[j] + step.neg_lr * delta;
  }
}

__global__ void unscale_kernel(const TensorSlot* slots, const Chunk* chunks, float inv_scale, int32_t* found) {
  const Chunk chunk = chunks[blockIdx.x];
  const TensorSlot t = slots[chunk.tensor];
  bool bad = false;
  for (int64_t j = chunk.begin + threadIdx.x; j < chunk.end; j += blockDim.x) {
    const float v = t.a[j];
    bad = bad || !isfinite(v);
    t.a[j] = v * inv_scale;
  }
  if (bad) *found = 1;  // every writer writes 1: no atomics needed
}

}  // namespace

void sgd_step(cudaStream_t s, const TensorSlot* slots, const Chunk* chunks, int64_t chunk_count,
              const Kernels::SgdStep& step) {
  if (chunk_count == 0) return;
  sgd_kernel<<<static_cast<unsigned>(chunk_count), kThreads, 0, s>>>(slots, chunks, step);
  KOLO_CHECK_LAUNCH();
}

void adam_step(cudaStream_t s, const TensorSlot* slots, const Chunk* chunks, int64_t chunk_count,
               const Kernels::AdamStep& step) {
  if (chunk_count == 0) return;
  adam_kernel<<<static_cast<unsigned>(chunk_count), kThreads, 0, s>>>(slots, chunks, step);
  KOLO_CHECK_LAUNCH();
}

void adadelta_step(cudaStream_t s, const TensorSlot* slots, const Chunk* chunks, int64_t chunk_count,
                   const Kernels::AdadeltaStep& step) {
  if (chunk_count == 0) return;
  adadelta_kernel<<<static_cast<unsigned>(chunk_count), kThreads, 0, s>>>(slots, chunks, step);
  KOLO_CHECK_LAUNCH();
}

void unscale_and_check(cudaStream_t s, const TensorSlot* slots, const Chunk* chunks, int64_t chunk_count,
                       float inv_scale, int32_t* found) {
  if (chunk_count == 0) return;
  unscale_kernel<<<static_cast<unsigned>(chunk_count), kThreads, 0, s>>>(slots, chunks, inv_scale, found);
  KOLO_CHECK_LAUNCH();
}

}  // namespace kolo::models::cuda::launch
