// Softmax cross-entropy (mean over the batch) and accuracy. Labels are checked here, on the
// host; the logits' kernels compute the rest (models/kernels.h).
#include "kolo/models.h"
#include "models/kernels.h"

namespace kolo::models {
namespace {
void check_labels(const Tensor& logits, const std::vector<int32_t>& labels) {
  if (logits.ndim() != 2 || logits.dim(0) != static_cast<int64_t>(labels.size()))
    throw Error(StatusCode::InvalidArgument, "kolo: logits " + shape_string(logits.shape()) + " do not match " +
                                                 std::to_string(labels.size()) + " labels");
  for (std::size_t i = 0; i < labels.size(); ++i)
    if (labels[i] < 0 || labels[i] >= logits.dim(1))
      throw Error(StatusCode::InvalidArgument, "kolo: label " + std::to_string(labels[i]) + " of sample " +
                                                   std::to_string(i) + " is outside [0, " +
                                                   std::to_string(logits.dim(1)) + ")");
}
}  // namespace

LossResult softmax_cross_entropy(const Tensor& logits, const std::vector<int32_t>& labels) {
  check_labels(logits, labels);
  const int64_t N = logits.dim(0), K = logits.dim(1);
  LossResult result;
  result.grad = Tensor::uninitialized(logits.shape(), logits.device());
  result.loss = kernels(logits.device()).softmax_cross_entropy(N, K, logits.data(), labels.data(), result.grad.data());
  return result;
}

double accuracy(const Tensor& logits, const std::vector<int32_t>& labels) {
  check_labels(logits, labels);
  const int64_t N = logits.dim(0), K = logits.dim(1);
  if (N == 0) return 0.0;
  return double(kernels(logits.device()).count_correct(N, K, logits.data(), labels.data())) / double(N);
}

}  // namespace kolo::models
