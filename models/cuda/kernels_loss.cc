// Loss and accuracy on the GPU: the host's labels uploaded (on the copy stream), per-row
// kernels, one fixed-order sum, one small copy to the host (the value the caller asked for).
#include "models/cuda/cuda_kernels.h"
#include "ops/cuda/device_guard.h"

namespace kolo::models::cuda {

double CudaKernels::softmax_cross_entropy(int64_t rows, int64_t classes, const float* logits, const int32_t* labels,
                                          float* grad) {
  ops::cuda::DeviceGuard on(context_.index());
  if (rows == 0) return 0.0;
  const auto device_labels = context_.upload(labels, static_cast<std::size_t>(rows) * sizeof(int32_t));
  auto per_row = doubles(static_cast<std::size_t>(rows) + 1);
  double* loss_rows = static_cast<double*>(per_row.get());
  launch::softmax_cross_entropy(context_.stream(), rows, classes, logits,
                                static_cast<const int32_t*>(device_labels.get()), grad, loss_rows);
  launch::sum_doubles(context_.stream(), rows, loss_rows, loss_rows + rows);
  double total = 0;
  context_.copy_to_host(&total, loss_rows + rows, sizeof total);
  return total / double(rows);
}

int64_t CudaKernels::count_correct(int64_t rows, int64_t classes, const float* logits, const int32_t* labels) {
  ops::cuda::DeviceGuard on(context_.index());
  if (rows == 0) return 0;
  const auto device_labels = context_.upload(labels, static_cast<std::size_t>(rows) * sizeof(int32_t));
  auto per_row = doubles(static_cast<std::size_t>(rows) + 1);
  double* correct = static_cast<double*>(per_row.get());
  launch::correct_rows(context_.stream(), rows, classes, logits, static_cast<const int32_t*>(device_labels.get()),
                       correct);
  launch::sum_doubles(context_.stream(), rows, correct, correct + rows);
  double total = 0;
  context_.copy_to_host(&total, correct + rows, sizeof total);
  return static_cast<int64_t>(total);
}

}  // namespace kolo::models::cuda
