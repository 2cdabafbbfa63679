#include "common/evaluator.h"

#include <algorithm>
#include <vector>

#include "common/device.h"

namespace kolo::examples {
namespace {

models::LoaderOptions without_shuffling_or_dropping(models::LoaderOptions options) {
  options.drop_last = false;
  return options;
}

}  // namespace

Evaluator::Evaluator(const models::Dataset& data, const models::LoaderOptions& options)
    : sampler_(data.count, kolo::rank(), kolo::size(), /*shuffle=*/false, /*seed=*/0),
      loader_(data, sampler_, without_shuffling_or_dropping(options)),
      mine_(data.count > kolo::rank() ? (data.count - kolo::rank() + kolo::size() - 1) / kolo::size() : 0) {}

double Evaluator::accuracy(models::Net& net) {
  net.eval();
  std::vector<double> counts{0, 0};  // correct, seen (exact in doubles far beyond any data set)
  const Device device = device_of(net);
  models::Batch batch;
  loader_.start_epoch(0);
  while (loader_.next(batch)) {
    const int64_t rows = std::min<int64_t>(batch.shape[0], mine_ - static_cast<int64_t>(counts[1]));
    const models::Tensor logits = net.forward(images_on(batch, device)).cpu();
    counts[0] += static_cast<double>(count_correct(logits, batch.labels, rows));
    counts[1] += static_cast<double>(rows);
  }
  net.train();
  kolo::allreduce("examples/eval_counts", kolo::view(counts), {.op = kolo::ReduceOp::Sum});
  return counts[1] > 0 ? counts[0] / counts[1] : 0;
}

int64_t count_correct(const models::Tensor& logits, const std::vector<int32_t>& labels, int64_t rows) {
  const int64_t classes = logits.dim(1);
  int64_t correct = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const float* row = logits.data() + i * classes;
    const int64_t best = std::max_element(row, row + classes) - row;
    if (best == labels[static_cast<std::size_t>(i)]) ++correct;
  }
  return correct;
}

}  // namespace kolo::examples
