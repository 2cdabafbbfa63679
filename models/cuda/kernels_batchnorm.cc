// Batch norm on the GPU: the statistics passes (double partial sums per channel slice,
// reduced in a fixed order), normalisation, and backward. The whole-step calls keep
// everything on the GPU; the per-channel passes copy their doubles to or from the host.
#include "models/cuda/cuda_kernels.h"
#include "ops/cuda/device_guard.h"

namespace kolo::models::cuda {
namespace {
double* as_doubles(const std::shared_ptr<void>& p) { return static_cast<double*>(p.get()); }
}  // namespace

void CudaKernels::add_channel_sums(int64_t n, int64_t c, int64_t hw, const float* x, float* out) {
  const int slices = launch::channel_slices(n, c, hw);
  auto partial = doubles(static_cast<std::size_t>(c * slices));
  auto sums = doubles(static_cast<std::size_t>(c));
  launch::channel_partial_sums(context_.stream(), n, c, hw, slices, x, as_doubles(partial));
  launch::reduce_partials(context_.stream(), c, slices, as_doubles(partial), 1.0, as_doubles(sums));
  launch::add_doubles(context_.stream(), c, as_doubles(sums), out);
}

void CudaKernels::channel_sums(int64_t n, int64_t c, int64_t hw, const float* x, double* sum) {
  ops::cuda::DeviceGuard on(context_.index());
  const int slices = launch::channel_slices(n, c, hw);
  auto partial = doubles(static_cast<std::size_t>(c * slices));
  auto out = doubles(static_cast<std::size_t>(c));
  launch::channel_partial_sums(context_.stream(), n, c, hw, slices, x, as_doubles(partial));
  launch::reduce_partials(context_.stream(), c, slices, as_doubles(partial), 1.0, as_doubles(out));
  context_.copy_to_host(sum, out.get(), static_cast<std::size_t>(c) * sizeof(double));
}

void CudaKernels::channel_centered_squares(int64_t n, int64_t c, int64_t hw, const float* x, const double* mean,
                                           double* squares) {
  ops::cuda::DeviceGuard on(context_.index());
  const int slices = launch::channel_slices(n, c, hw);
  auto mean_on_device = doubles(static_cast<std::size_t>(c));
  context_.copy_to_device(mean_on_device.get(), mean, static_cast<std::size_t>(c) * sizeof(double));
  auto partial = doubles(static_cast<std::size_t>(c * slices));
  auto out = doubles(static_cast<std::size_t>(c));
  launch::channel_partial_centered_squares(context_.stream(), n, c, hw, slices, x, as_doubles(mean_on_device),
                                            as_doubles(partial));
  launch::reduce_partials(context_.stream(), c, slices, as_doubles(partial), 1.0, as_doubles(out));
  context_.copy_to_host(squares, out.get(), static_cast<std::size_t>(c) * sizeof(double));
}

void CudaKernels::batchnorm_apply(int64_t n, int64_t c, int64_t hw, const float* x, const float* mean,
                                  const float* inv_std, const float* gamma, const float* beta, float* y) {
  ops::cuda::DeviceGuard on(context_.index());
  launch::batchnorm_apply(context_.stream(), n, c, hw, x, mean, inv_std, gamma, beta, y);
}

std::shared_ptr<void> CudaKernels::grad_sums(int64_t n, int64_t c, int64_t hw, const float* x, const float* dy,
                                             const float* mean, const float* inv_std, float* dgamma, float* dbeta) {
  const int slices = launch::channel_slices(n, c, hw);
  const auto C = static_cast<std::size_t>(c);
  auto partial = doubles(2 * C * static_cast<std::size_t>(slices));
  auto sums = doubles(3 * C);
  double* p = as_doubles(partial);
  double* s = as_doubles(sums);
  cudaStream_t stream = context_.stream();
  launch::channel_partial_grad_sums(stream, n, c, hw, slices, x, dy, mean, p, p + C * slices);
  launch::reduce_partials(stream, c, slices, p, 1.0, s);
  launch::reduce_partials(stream, c, slices, p + C * slices, 1.0, s + C);
  launch::batchnorm_param_grads(stream, c, s, s + C, inv_std, dgamma, dbeta, s + 2 * C);
  return sums;
}

void CudaKernels::batchnorm_grad_sums(int64_t n, int64_t c, int64_t hw, const float* x, const float* dy,
                                      const float* mean, const float* inv_std, double* sum_dy, double* sum_dy_xhat) {
  ops::cuda::DeviceGuard on(context_.index());
  const auto C = static_cast<std::size_t>(c);
  // The parameter gradients are the layer's business here: they go to a zeroed scratch.
  auto scratch = context_.allocate(2 * C * sizeof(float));
  float* zero = static_cast<float*>(scratch.get());
  launch::fill(context_.stream(), 2 * c, zero, 0.0f);
  auto sums = grad_sums(n, c, hw, x, dy, mean, inv_std, zero, zero + C);
  context_.copy_to_host(sum_dy, sums.get(), C * sizeof(double));
  context_.copy_to_host(sum_dy_xhat, as_doubles(sums) + 2 * C, C * sizeof(double));
}

void CudaKernels::batchnorm_backward_input(int64_t n, int64_t c, int64_t hw, const float* x, const float* dy,
                                           const float* mean, const float* inv_std, const float* gamma,
                                           const double* sum_dy, const double* sum_dy_xhat, double count, float* dx) {
  ops::cuda::DeviceGuard on(context_.index());
  const auto C = static_cast<std::size_t>(c);
  auto sums = doubles(2 * C);
  context_.copy_to_device(sums.get(), sum_dy, C * sizeof(double));
  context_.copy_to_device(as_doubles(sums) + C, sum_dy_xhat, C * sizeof(double));
  launch::batchnorm_backward_input(context_.stream(), n, c, hw, x, dy, mean, inv_std, gamma, as_doubles(sums),
                                    as_doubles(sums) + C, count, dx);
}

void CudaKernels::batchnorm_forward_training(int64_t n, int64_t c, int64_t hw, const float* x, const float* gamma,
                                             const float* beta, double eps, double momentum, float* running_mean,
                                             float* running_var, float* num_batches_tracked, float* save_mean,
                                             float* save_inv_std, float* y) {
  ops::cuda::DeviceGuard on(context_.index());
  const int slices = launch::channel_slices(n, c, hw);
  const auto C = static_cast<std::size_t>(c);
  const double count = double(n * hw);
  auto partial = doubles(C * static_cast<std::size_t>(slices));
  auto stats = doubles(2 * C);  // mean | Σ(x - mean)²
  double* mean = as_doubles(stats);
  cudaStream_t s = context_.stream();
  launch::channel_partial_sums(s, n, c, hw, slices, x, as_doubles(partial));
  launch::reduce_partials(s, c, slices, as_doubles(partial), count, mean);
  launch::channel_partial_centered_squares(s, n, c, hw, slices, x, mean, as_doubles(partial));
  launch::reduce_partials(s, c, slices, as_doubles(partial), 1.0, mean + C);
  launch::batchnorm_finish_statistics(s, c, mean, mean + C, count, eps, static_cast<float>(momentum), running_mean,
                                       running_var, num_batches_tracked, save_mean, save_inv_std);
  launch::batchnorm_apply(s, n, c, hw, x, save_mean, save_inv_std, gamma, beta, y);
}

void CudaKernels::batchnorm_finish_statistics(int64_t c, const double* mean, const double* squares, double count,
                                              double eps, double momentum, float* running_mean, float* running_var,
                                              float* num_batches_tracked, float* save_mean, float* save_inv_std) {
  ops::cuda::DeviceGuard on(context_.index());
  const auto C = static_cast<std::size_t>(c);
  auto stats = doubles(2 * C);  // mean | Σ(x - mean)², as batchnorm_forward_training's
  context_.copy_to_device(stats.get(), mean, C * sizeof(double));
  context_.copy_to_device(as_doubles(stats) + C, squares, C * sizeof(double));
  launch::batchnorm_finish_statistics(context_.stream(), c, as_doubles(stats), as_doubles(stats) + C, count, eps,
                                       static_cast<float>(momentum), running_mean, running_var, num_batches_tracked,
                                       save_mean, save_inv_std);
}

void CudaKernels::batchnorm_inference_stats(int64_t c, const float* running_mean, const float* running_var, double eps,
                                            float* mean, float* inv_std) {
  ops::cuda::DeviceGuard on(context_.index());
  launch::batchnorm_inference_stats(context_.stream(), c, running_mean, running_var, eps, mean, inv_std);
}

void CudaKernels::batchnorm_backward_training(int64_t n, int64_t c, int64_t hw, const float* x, const float* dy,
                                              const float* mean, const float* inv_std, const float* gamma,
                                              float* dgamma, float* dbeta, float* dx) {
  ops::cuda::DeviceGuard on(context_.index());
  auto sums = grad_sums(n, c, hw, x, dy, mean, inv_std, dgamma, dbeta);
  const double* s = as_doubles(sums);
  launch::batchnorm_backward_input(context_.stream(), n, c, hw, x, dy, mean, inv_std, gamma, s, s + 2 * c,
                                    double(n * hw), dx);
}

}  // namespace kolo::models::cuda
