// Loss and accuracy on the GPU: per-row kernels, one fixed-order sum, one small copy to the
// host (the value the caller asked for).
#include "models/cuda/cuda_backend.h"
#include "models/cuda/device_guard.h"

namespace kolo::models::cuda {

double CudaBackend::softmax_cross_entropy(int64_t rows, int64_t classes, const float* logits, const int32_t* labels,
                                          float* grad) {
  DeviceGuard on(context_.index());
  if (rows == 0) return 0.0;
  auto per_row = doubles(static_cast<std::size_t>(rows) + 1);
  double* loss_rows = static_cast<double*>(per_row.get());
  kernels::softmax_cross_entropy(context_.stream(), rows, classes, logits, labels, grad, loss_rows);
  kernels::sum_doubles(context_.stream(), rows, loss_rows, loss_rows + rows);
  double total = 0;
  context_.copy_to_host(&total, loss_rows + rows, sizeof total);
  return total / double(rows);
}

int64_t CudaBackend::count_correct(int64_t rows, int64_t classes, const float* logits, const int32_t* labels) {
  DeviceGuard on(context_.index());
  if (rows == 0) return 0;
  auto per_row = doubles(static_cast<std::size_t>(rows) + 1);
  double* correct = static_cast<double*>(per_row.get());
  kernels::correct_rows(context_.stream(), rows, classes, logits, labels, correct);
  kernels::sum_doubles(context_.stream(), rows, correct, correct + rows);
  double total = 0;
  context_.copy_to_host(&total, correct + rows, sizeof total);
  return static_cast<int64_t>(total);
}

}  // namespace kolo::models::cuda
