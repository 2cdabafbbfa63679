// Batch norm's whole steps on the CPU, from the per-channel passes in batchnorm.cc: the
// statistics go through small host vectors (c doubles), the per-element work through the
// passes. Running statistics follow PyTorch: biased variance to normalise, unbiased for
// running_var, running = (1 - m)·running + m·batch with m rounded to float.
#include <cmath>
#include <vector>

#include "cpu_kernels.h"

namespace kolo::models::cpu {

void CpuKernels::batchnorm_forward_training(int64_t n, int64_t c, int64_t hw, const float* x, const float* gamma,
                                            const float* beta, double eps, double momentum, float* running_mean,
                                            float* running_var, float* num_batches_tracked, float* save_mean,
                                            float* save_inv_std, float* y) {
  const double count = double(n * hw);
  std::vector<double> mean(static_cast<std::size_t>(c)), squares(static_cast<std::size_t>(c));
  channel_sums(n, c, hw, x, mean.data());
  for (double& m : mean) m /= count;
  channel_centered_squares(n, c, hw, x, mean.data(), squares.data());
  batchnorm_finish_statistics(c, mean.data(), squares.data(), count, eps, momentum, running_mean, running_var,
                              num_batches_tracked, save_mean, save_inv_std);
  batchnorm_apply(n, c, hw, x, save_mean, save_inv_std, gamma, beta, y);
}

void CpuKernels::batchnorm_finish_statistics(int64_t c, const double* mean, const double* squares, double count,
                                             double eps, double momentum, float* running_mean, float* running_var,
                                             float* num_batches_tracked, float* save_mean, float* save_inv_std) {
  const float m = static_cast<float>(momentum);
  for (int64_t ch = 0; ch < c; ++ch) {
    const double var = squares[ch] / count;
    save_mean[ch] = static_cast<float>(mean[ch]);
    save_inv_std[ch] = static_cast<float>(1.0 / std::sqrt(var + eps));
    running_mean[ch] = (1 - m) * running_mean[ch] + m * save_mean[ch];
    running_var[ch] = (1 - m) * running_var[ch] + m * static_cast<float>(var * count / (count - 1));
  }
  num_batches_tracked[0] += 1;
}

void CpuKernels::batchnorm_inference_stats(int64_t c, const float* running_mean, const float* running_var,
                                           double eps, float* mean, float* inv_std) {
  for (int64_t ch = 0; ch < c; ++ch) {
    mean[ch] = running_mean[ch];
    inv_std[ch] = static_cast<float>(1.0 / std::sqrt(double(running_var[ch]) + eps));
  }
}

void CpuKernels::batchnorm_backward_training(int64_t n, int64_t c, int64_t hw, const float* x, const float* dy,
                                             const float* mean, const float* inv_std, const float* gamma,
                                             float* dgamma, float* dbeta, float* dx) {
  std::vector<double> sum_dy(static_cast<std::size_t>(c)), sum_dy_xhat(static_cast<std::size_t>(c));
  batchnorm_grad_sums(n, c, hw, x, dy, mean, inv_std, sum_dy.data(), sum_dy_xhat.data());
  for (int64_t ch = 0; ch < c; ++ch) {
    dbeta[ch] += static_cast<float>(sum_dy[static_cast<std::size_t>(ch)]);
    dgamma[ch] += static_cast<float>(sum_dy_xhat[static_cast<std::size_t>(ch)]);
  }
  batchnorm_backward_input(n, c, hw, x, dy, mean, inv_std, gamma, sum_dy.data(), sum_dy_xhat.data(), double(n * hw),
                           dx);
}

}  // namespace kolo::models::cpu
