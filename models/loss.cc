// Softmax cross-entropy (mean over the batch) and accuracy. Labels are checked on the host;
// for logits on a GPU they are copied there and the backend computes the rest.
#include <cmath>

#include "kolo/models.h"
#include "models/backend.h"
#include "models/cuda/gpu_runtime.h"

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

// The labels as int32 in a (float) tensor's 4-byte words on `device`.
Tensor labels_on(Device device, const std::vector<int32_t>& labels) {
  Tensor t = Tensor::uninitialized({static_cast<int64_t>(labels.size())}, device);
  if (!labels.empty())
    gpu_runtime().copy(t.data(), device, labels.data(), Device::cpu(), labels.size() * sizeof(int32_t));
  return t;
}
const int32_t* as_labels(const Tensor& t) { return reinterpret_cast<const int32_t*>(t.data()); }
}  // namespace

LossResult softmax_cross_entropy(const Tensor& logits, const std::vector<int32_t>& labels) {
  check_labels(logits, labels);
  const int64_t N = logits.dim(0), K = logits.dim(1);
  if (!logits.device().is_cpu()) {
    LossResult result;
    result.grad = Tensor::uninitialized(logits.shape(), logits.device());
    if (N == 0) return result;
    const Tensor on_device = labels_on(logits.device(), labels);
    result.loss = compute(logits.device()).softmax_cross_entropy(N, K, logits.data(), as_labels(on_device),
                                                                 result.grad.data());
    return result;
  }
  LossResult result;
  result.grad = Tensor(logits.shape());
  double total = 0;
  for (int64_t i = 0; i < N; ++i) {
    const float* z = logits.data() + i * K;
    float* g = result.grad.data() + i * K;
    double max = z[0];
    for (int64_t k = 1; k < K; ++k) max = std::max(max, double(z[k]));
    double sum = 0;
    for (int64_t k = 0; k < K; ++k) sum += std::exp(double(z[k]) - max);
    const double log_sum = std::log(sum) + max;
    total += log_sum - z[labels[static_cast<std::size_t>(i)]];
    for (int64_t k = 0; k < K; ++k)
      g[k] = static_cast<float>(std::exp(double(z[k]) - log_sum) / double(N));
    g[labels[static_cast<std::size_t>(i)]] -= static_cast<float>(1.0 / double(N));
  }
  result.loss = N > 0 ? total / double(N) : 0.0;
  return result;
}

double accuracy(const Tensor& logits, const std::vector<int32_t>& labels) {
  check_labels(logits, labels);
  const int64_t N = logits.dim(0), K = logits.dim(1);
  if (!logits.device().is_cpu()) {
    if (N == 0) return 0.0;
    const Tensor on_device = labels_on(logits.device(), labels);
    return double(compute(logits.device()).count_correct(N, K, logits.data(), as_labels(on_device))) / double(N);
  }
  int64_t correct = 0;
  for (int64_t i = 0; i < N; ++i) {
    const float* z = logits.data() + i * K;
    int64_t best = 0;
    for (int64_t k = 1; k < K; ++k)
      if (z[k] > z[best]) best = k;
    correct += best == labels[static_cast<std::size_t>(i)];
  }
  return N > 0 ? double(correct) / double(N) : 0.0;
}

}  // namespace kolo::models
