// Softmax cross-entropy and accuracy with the CPU's numerics (models/cpu/loss.cc): the row's
// maximum, the log-sum-exp in double, the gradient rounded to float per element.
#include <cfloat>

#include "models/cuda/launchers.h"
#include "models/cuda/launch.cuh"

namespace kolo::models::cuda::launch {
namespace {

constexpr int kRowThreads = 256;

// One block per row.
__global__ void softmax_cross_entropy_kernel(int64_t rows, int64_t classes, const float* logits,
                                             const int32_t* labels, float* grad, double* loss_rows) {
  __shared__ double shared[kRowThreads];
  const int64_t row = blockIdx.x;
  const float* z = logits + row * classes;
  float* g = grad + row * classes;

  // The maximum as the CPU takes it: z[0], then std::max, which keeps the first operand
  // when the second is NaN (fmax does the same).
  double max = -DBL_MAX;
  for (int64_t k = threadIdx.x; k < classes; k += kRowThreads) max = fmax(max, double(z[k]));
  shared[threadIdx.x] = max;
  __syncthreads();
  for (int stride = kRowThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) shared[threadIdx.x] = fmax(shared[threadIdx.x], shared[threadIdx.x + stride]);
    __syncthreads();
  }
  max = shared[0];
  __syncthreads();

  double sum = 0;
  for (int64_t k = threadIdx.x; k < classes; k += kRowThreads) sum += exp(double(z[k]) - max);
  shared[threadIdx.x] = sum;
  __syncthreads();
  for (int stride = kRowThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) shared[threadIdx.x] += shared[threadIdx.x + stride];
    __syncthreads();
  }
  const double log_sum = log(shared[0]) + max;

  const int32_t label = labels[row];
  const double n = double(rows);
  for (int64_t k = threadIdx.x; k < classes; k += kRowThreads) {
    float v = static_cast<float>(exp(double(z[k]) - log_sum) / n);
    if (k == label) v -= static_cast<float>(1.0 / n);
    g[k] = v;
  }
  if (threadIdx.x == 0) loss_rows[row] = log_sum - z[label];
}

// One thread per row: the first maximum, scanning as the CPU does (NaN never wins).
__global__ void correct_rows_kernel(int64_t rows, int64_t classes, const float* logits, const int32_t* labels,
                                    double* correct) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  const float* z = logits + row * classes;
  int64_t best = 0;
  for (int64_t k = 1; k < classes; ++k)
    if (z[k] > z[best]) best = k;
  correct[row] = best == labels[row] ? 1.0 : 0.0;
}

__global__ void sum_doubles_kernel(int64_t count, const double* values, double* out) {
  __shared__ double shared[kRowThreads];
  double sum = 0;
  for (int64_t i = threadIdx.x; i < count; i += kRowThreads) sum += values[i];
  shared[threadIdx.x] = sum;
  __syncthreads();
  for (int stride = kRowThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) shared[threadIdx.x] += shared[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[0] = shared[0];
}

}  // namespace

void softmax_cross_entropy(cudaStream_t s, int64_t rows, int64_t classes, const float* logits, const int32_t* labels,
                           float* grad, double* loss_rows) {
  if (rows == 0) return;
  softmax_cross_entropy_kernel<<<static_cast<unsigned>(rows), kRowThreads, 0, s>>>(rows, classes, logits, labels, grad,
                                                                                   loss_rows);
  KOLO_CHECK_LAUNCH();
}

void correct_rows(cudaStream_t s, int64_t rows, int64_t classes, const float* logits, const int32_t* labels,
                  double* correct) {
  if (rows == 0) return;
  correct_rows_kernel<<<static_cast<unsigned>((rows + 127) / 128), 128, 0, s>>>(rows, classes, logits, labels,
                                                                                correct);
  KOLO_CHECK_LAUNCH();
}

void sum_doubles(cudaStream_t s, int64_t count, const double* values, double* out) {
  sum_doubles_kernel<<<1, kRowThreads, 0, s>>>(count, values, out);
  KOLO_CHECK_LAUNCH();
}

}  // namespace kolo::models::cuda::launch
