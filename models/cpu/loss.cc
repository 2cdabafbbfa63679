// Softmax cross-entropy (mean over the rows) and accuracy, row by row: the row's maximum,
// log-sum-exp in double, each gradient element rounded to float once.
#include <algorithm>
#include <cmath>

#include "cpu_kernels.h"

namespace kolo::models::cpu {

double CpuKernels::softmax_cross_entropy(int64_t rows, int64_t classes, const float* logits, const int32_t* labels,
                                         float* grad) {
  double total = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const float* z = logits + i * classes;
    float* g = grad + i * classes;
    double max = z[0];
    for (int64_t k = 1; k < classes; ++k) max = std::max(max, double(z[k]));
    double sum = 0;
    for (int64_t k = 0; k < classes; ++k) sum += std::exp(double(z[k]) - max);
    const double log_sum = std::log(sum) + max;
    total += log_sum - z[labels[i]];
    for (int64_t k = 0; k < classes; ++k) g[k] = static_cast<float>(std::exp(double(z[k]) - log_sum) / double(rows));
    g[labels[i]] -= static_cast<float>(1.0 / double(rows));
  }
  return rows > 0 ? total / double(rows) : 0.0;
}

int64_t CpuKernels::count_correct(int64_t rows, int64_t classes, const float* logits, const int32_t* labels) {
  int64_t correct = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const float* z = logits + i * classes;
    int64_t best = 0;
    for (int64_t k = 1; k < classes; ++k)
      if (z[k] > z[best]) best = k;
    correct += best == labels[i];
  }
  return correct;
}

}  // namespace kolo::models::cpu
