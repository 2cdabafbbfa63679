// Kernels conformance (kernels_conformance.h): batch norm's per-channel passes
// (channel_sums, channel_centered_squares, batchnorm_apply, batchnorm_grad_sums,
// batchnorm_backward_input) and its whole steps (batchnorm_forward_training,
// batchnorm_finish_statistics, batchnorm_inference_stats, batchnorm_backward_training) on
// every implementation, on data with a large mean next to a small spread (what one-pass
// float statistics get wrong).
//
// Bounds. Sums are in double everywhere: against the reference (a plain double loop), and
// a GPU's (partial sums per slice, added in a fixed order) against the CPU's, they differ
// only in summation order (1e-13 for Σx; 1e-12 for the centered squares and Σdy, whose
// terms cancel more; 1e-10 for Σdy·xhat, which cancels most). Statistics are doubles
// rounded once to float: half an ulp from the reference (1e-7), and where a GPU's double
// differs from the CPU's in its last bits, one ulp from the CPU's (2.5e-7). Normalising is
// x·scale + shift in float with shift = beta - mean·scale: at |mean|/std ≈ 1000 both
// terms are ~1000× the result, and their float roundings cost ~2^-24·1000 ≈ 6e-5 of it
// (1e-5 rms measured on the CPU; PyTorch's CPU kernel rounds the same way): 5e-5 against
// the reference, and against the CPU as well, since nvcc fuses each a·b + c into one
// rounding. The input gradient and the running averages are a few float operations with
// little cancellation: 1e-5 and 1e-6. num_batches_tracked counts: bit for bit.
#include "kernels_conformance.h"

using namespace kolo::models;
using namespace kolo::models::conformance;
using kolo::Device;

namespace {

constexpr int64_t kN = 3, kC = 5, kHW = 37;
constexpr double kEps = 1e-5, kMomentum = 0.1;

// (kN, kC, kHW) values around 1000 with a spread of about 1.
Tensor shifted_input(uint64_t seed) {
  Tensor x = random_tensor({kN, kC, kHW}, seed);
  for (int64_t i = 0; i < x.numel(); ++i) x[i] += 1000.0f;
  return x;
}

// x[n, c, j] for channel c's values in order.
template <typename Body>
void for_channel(int64_t c, Body&& body) {
  for (int64_t n = 0; n < kN; ++n)
    for (int64_t j = 0; j < kHW; ++j) body((n * kC + c) * kHW + j);
}

struct Statistics {
  std::vector<double> sum, mean, squares;
};
Statistics statistics(const Tensor& x) {
  Statistics s{std::vector<double>(kC), std::vector<double>(kC), std::vector<double>(kC)};
  for (int64_t c = 0; c < kC; ++c) {
    const auto at = static_cast<std::size_t>(c);
    for_channel(c, [&](int64_t i) { s.sum[at] += x[i]; });
    s.mean[at] = s.sum[at] / double(kN * kHW);
    for_channel(c, [&](int64_t i) { s.squares[at] += (x[i] - s.mean[at]) * (x[i] - s.mean[at]); });
  }
  return s;
}

// y = (x - mean)·inv_std·gamma + beta.
std::vector<double> normalized(const Tensor& x, const std::vector<double>& mean, const std::vector<double>& inv_std,
                               const Tensor& gamma, const Tensor& beta) {
  std::vector<double> y(static_cast<std::size_t>(x.numel()));
  for (int64_t c = 0; c < kC; ++c) {
    const auto at = static_cast<std::size_t>(c);
    for_channel(c, [&](int64_t i) {
      y[static_cast<std::size_t>(i)] = (x[i] - mean[at]) * inv_std[at] * gamma[c] + beta[c];
    });
  }
  return y;
}

struct GradSums {
  std::vector<double> dy, dy_xhat;
};
GradSums grad_sums(const Tensor& x, const Tensor& dy, const Tensor& mean, const Tensor& inv_std) {
  GradSums g{std::vector<double>(kC), std::vector<double>(kC)};
  for (int64_t c = 0; c < kC; ++c) {
    const auto at = static_cast<std::size_t>(c);
    for_channel(c, [&](int64_t i) {
      g.dy[at] += dy[i];
      g.dy_xhat[at] += double(dy[i]) * (double(x[i]) - mean[c]) * inv_std[c];
    });
  }
  return g;
}

// dx = gamma·inv_std·(dy - Σdy/M - xhat·Σdy·xhat/M).
std::vector<double> input_gradient(const Tensor& x, const Tensor& dy, const Tensor& mean, const Tensor& inv_std,
                                   const Tensor& gamma, const GradSums& g, double count) {
  std::vector<double> dx(static_cast<std::size_t>(x.numel()));
  for (int64_t c = 0; c < kC; ++c) {
    const auto at = static_cast<std::size_t>(c);
    for_channel(c, [&](int64_t i) {
      const double xhat = (double(x[i]) - mean[c]) * inv_std[c];
      dx[static_cast<std::size_t>(i)] =
          double(gamma[c]) * inv_std[c] * (dy[i] - g.dy[at] / count - xhat * g.dy_xhat[at] / count);
    });
  }
  return dx;
}

// What batchnorm_finish_statistics writes, from the double statistics.
struct Finished {
  std::vector<double> save_mean, save_inv_std, running_mean, running_var;
};
Finished finished(const std::vector<double>& mean, const std::vector<double>& squares, double count,
                  const Tensor& running_mean, const Tensor& running_var) {
  Finished f{std::vector<double>(kC), std::vector<double>(kC), std::vector<double>(kC), std::vector<double>(kC)};
  const double m = static_cast<float>(kMomentum);
  for (int64_t c = 0; c < kC; ++c) {
    const auto at = static_cast<std::size_t>(c);
    const double var = squares[at] / count;
    f.save_mean[at] = mean[at];
    f.save_inv_std[at] = 1.0 / std::sqrt(var + kEps);
    f.running_mean[at] = (1 - m) * running_mean[c] + m * mean[at];
    f.running_var[at] = (1 - m) * running_var[c] + m * var * count / (count - 1);
  }
  return f;
}

// What batchnorm_finish_statistics' outputs are held to, with the step count it leaves.
std::vector<Expected> expected_statistics(const Finished& f, double num_batches_tracked) {
  return {{"save_mean", f.save_mean, {1e-7, 2.5e-7}},
          {"save_inv_std", f.save_inv_std, {1e-7, 2.5e-7}},
          {"running_mean", f.running_mean, {1e-6, 1e-6}},
          {"running_var", f.running_var, {1e-6, 1e-6}},
          {"num_batches_tracked", {num_batches_tracked}, {0, 0}}};
}

// x's batch mean and 1 / std per channel, as float tensors (a normalisation's inputs).
struct FloatStatistics {
  Tensor mean = Tensor(std::vector<int64_t>{kC}), inv_std = Tensor(std::vector<int64_t>{kC});
};
FloatStatistics float_statistics(const Tensor& x) {
  const Statistics s = statistics(x);
  FloatStatistics f;
  for (int64_t c = 0; c < kC; ++c) {
    f.mean[c] = static_cast<float>(s.mean[static_cast<std::size_t>(c)]);
    f.inv_std[c] = static_cast<float>(1.0 / std::sqrt(s.squares[static_cast<std::size_t>(c)] / double(kN * kHW)));
  }
  return f;
}

// Rounded to float, as the statistics a kernel writes.
std::vector<double> as_floats(std::vector<double> v) {
  for (double& x : v) x = static_cast<float>(x);
  return v;
}

}  // namespace

TEST_CASE("channel_sums and channel_centered_squares: per-channel Σx and Σ(x - mean)² in double, on the host",
          "[kernels][batchnorm]") {
  const Device device = GENERATE(kernel_devices());
  if (!present(device)) return;
  const Tensor x = shifted_input(1);
  const Statistics want = statistics(x);
  const auto run = [&](Device d) {
    const Tensor xd = x.to(d);
    std::vector<double> sum(kC), squares(kC);
    kernels(d).channel_sums(kN, kC, kHW, xd.data(), sum.data());
    kernels(d).channel_centered_squares(kN, kC, kHW, xd.data(), want.mean.data(), squares.data());
    return Outputs{{"sum", sum}, {"squares", squares}};
  };
  conform(device, run, {{"sum", want.sum, {1e-13, 1e-13}}, {"squares", want.squares, {1e-12, 1e-12}}});
}

TEST_CASE("batchnorm_apply: (x - mean)·inv_std·gamma + beta per channel", "[kernels][batchnorm]") {
  const Device device = GENERATE(kernel_devices());
  if (!present(device)) return;
  const Tensor x = shifted_input(1), gamma = random_tensor({kC}, 5), beta = random_tensor({kC}, 6);
  const FloatStatistics stats = float_statistics(x);
  const Tensor &mean = stats.mean, &inv_std = stats.inv_std;
  const auto run = [&](Device d) {
    Tensor y = Tensor::uninitialized(x.shape(), d);
    const Tensor xd = x.to(d), md = mean.to(d), sd = inv_std.to(d), gd = gamma.to(d), bd = beta.to(d);
    kernels(d).batchnorm_apply(kN, kC, kHW, xd.data(), md.data(), sd.data(), gd.data(), bd.data(), y.data());
    return Outputs{{"y", values(y)}};
  };
  conform(device, run, {{"y", normalized(x, values(mean), values(inv_std), gamma, beta), {5e-5, 5e-5}}});
}

TEST_CASE("batchnorm_grad_sums and batchnorm_backward_input: Σdy, Σdy·xhat on the host, then dx",
          "[kernels][batchnorm]") {
  const Device device = GENERATE(kernel_devices());
  if (!present(device)) return;
  const Tensor x = shifted_input(1), dy = random_tensor({kN, kC, kHW}, 2), gamma = random_tensor({kC}, 5);
  Tensor mean({kC}), inv_std({kC});
  for (int64_t c = 0; c < kC; ++c) {
    mean[c] = 1000.0f + 0.01f * float(c);
    inv_std[c] = 0.5f + 0.25f * float(c);
  }
  const GradSums want = grad_sums(x, dy, mean, inv_std);
  const double count = double(kN * kHW);
  const auto run = [&](Device d) {
    Tensor dx = Tensor::uninitialized(x.shape(), d);
    const Tensor xd = x.to(d), dyd = dy.to(d), md = mean.to(d), sd = inv_std.to(d), gd = gamma.to(d);
    std::vector<double> sum_dy(kC), sum_dy_xhat(kC);
    kernels(d).batchnorm_grad_sums(kN, kC, kHW, xd.data(), dyd.data(), md.data(), sd.data(), sum_dy.data(),
                                   sum_dy_xhat.data());
    // The input gradient from the reference's sums, so that it is checked on its own.
    kernels(d).batchnorm_backward_input(kN, kC, kHW, xd.data(), dyd.data(), md.data(), sd.data(), gd.data(),
                                        want.dy.data(), want.dy_xhat.data(), count, dx.data());
    return Outputs{{"sum_dy", sum_dy}, {"sum_dy_xhat", sum_dy_xhat}, {"dx", values(dx)}};
  };
  conform(device, run,
          {{"sum_dy", want.dy, {1e-12, 1e-12}},
           {"sum_dy_xhat", want.dy_xhat, {1e-10, 1e-10}},
           {"dx", input_gradient(x, dy, mean, inv_std, gamma, want, count), {1e-5, 1e-5}}});
}

TEST_CASE("batchnorm_forward_training: batch statistics, PyTorch's running averages, the step count, y",
          "[kernels][batchnorm]") {
  const Device device = GENERATE(kernel_devices());
  if (!present(device)) return;
  const Tensor x = shifted_input(1), gamma = random_tensor({kC}, 5), beta = random_tensor({kC}, 6);
  const Tensor running_mean = random_tensor({kC}, 7), running_var = Tensor::full({kC}, 1.5f);
  const auto run = [&](Device d) {
    Tensor y = Tensor::uninitialized(x.shape(), d), save_mean = Tensor::uninitialized({kC}, d);
    Tensor save_inv_std = Tensor::uninitialized({kC}, d), rm = copy_to(running_mean, d), rv = copy_to(running_var, d);
    Tensor steps = Tensor::full(std::vector<int64_t>{}, 41.0f, d);
    const Tensor xd = x.to(d), gd = gamma.to(d), bd = beta.to(d);
    kernels(d).batchnorm_forward_training(kN, kC, kHW, xd.data(), gd.data(), bd.data(), kEps, kMomentum, rm.data(),
                                          rv.data(), steps.data(), save_mean.data(), save_inv_std.data(), y.data());
    return Outputs{{"y", values(y)},           {"save_mean", values(save_mean)},  {"save_inv_std", values(save_inv_std)},
                   {"running_mean", values(rm)}, {"running_var", values(rv)}, {"num_batches_tracked", values(steps)}};
  };
  const Statistics s = statistics(x);
  const Finished f = finished(s.mean, s.squares, double(kN * kHW), running_mean, running_var);
  std::vector<Expected> expected = expected_statistics(f, 42.0);
  expected.push_back({"y", normalized(x, as_floats(f.save_mean), as_floats(f.save_inv_std), gamma, beta), {5e-5, 5e-5}});
  conform(device, run, expected);
}

TEST_CASE("batchnorm_finish_statistics: SyncBatchNorm's end of the step, from host statistics",
          "[kernels][batchnorm]") {
  const Device device = GENERATE(kernel_devices());
  if (!present(device)) return;
  const std::vector<double> mean = {1000.25, -3.5, 0.0, 1e-3, 7.0}, squares = {12.5, 0.75, 3.0, 1e-4, 222.0};
  const double count = 2.0 * kN * kHW;  // two ranks' batches
  const Tensor running_mean = random_tensor({kC}, 7), running_var = Tensor::full({kC}, 1.5f);
  const auto run = [&](Device d) {
    Tensor save_mean = Tensor::uninitialized({kC}, d), save_inv_std = Tensor::uninitialized({kC}, d);
    Tensor rm = copy_to(running_mean, d), rv = copy_to(running_var, d), steps = Tensor::zeros({}, d);
    kernels(d).batchnorm_finish_statistics(kC, mean.data(), squares.data(), count, kEps, kMomentum, rm.data(),
                                           rv.data(), steps.data(), save_mean.data(), save_inv_std.data());
    return Outputs{{"save_mean", values(save_mean)}, {"save_inv_std", values(save_inv_std)},
                   {"running_mean", values(rm)},     {"running_var", values(rv)},
                   {"num_batches_tracked", values(steps)}};
  };
  conform(device, run, expected_statistics(finished(mean, squares, count, running_mean, running_var), 1.0));
}

TEST_CASE("batchnorm_inference_stats: the running mean, and 1 / sqrt(running_var + eps) in double",
          "[kernels][batchnorm]") {
  const Device device = GENERATE(kernel_devices());
  if (!present(device)) return;
  const Tensor running_mean = random_tensor({kC}, 7), running_var = Tensor::from({kC}, {1.5f, 1e-6f, 0.0f, 4.0f, 9e3f});
  const auto run = [&](Device d) {
    Tensor mean = Tensor::uninitialized({kC}, d), inv_std = Tensor::uninitialized({kC}, d);
    const Tensor rm = running_mean.to(d), rv = running_var.to(d);
    kernels(d).batchnorm_inference_stats(kC, rm.data(), rv.data(), kEps, mean.data(), inv_std.data());
    return Outputs{{"mean", values(mean)}, {"inv_std", values(inv_std)}};
  };
  std::vector<double> inv_std(kC);
  for (int64_t c = 0; c < kC; ++c) inv_std[static_cast<std::size_t>(c)] = 1.0 / std::sqrt(running_var[c] + kEps);
  conform(device, run, {{"mean", values(running_mean), {0, 0}}, {"inv_std", inv_std, {1e-7, 2.5e-7}}});
}

TEST_CASE("batchnorm_backward_training: dgamma += Σdy·xhat, dbeta += Σdy, and dx with count n·hw",
          "[kernels][batchnorm]") {
  const Device device = GENERATE(kernel_devices());
  if (!present(device)) return;
  const Tensor x = shifted_input(1), dy = random_tensor({kN, kC, kHW}, 2), gamma = random_tensor({kC}, 5);
  const Tensor dgamma0 = random_tensor({kC}, 8), dbeta0 = random_tensor({kC}, 9);
  const FloatStatistics stats = float_statistics(x);
  const Tensor &mean = stats.mean, &inv_std = stats.inv_std;
  const auto run = [&](Device d) {
    Tensor dx = Tensor::uninitialized(x.shape(), d), dgamma = copy_to(dgamma0, d), dbeta = copy_to(dbeta0, d);
    const Tensor xd = x.to(d), dyd = dy.to(d), md = mean.to(d), sd = inv_std.to(d), gd = gamma.to(d);
    kernels(d).batchnorm_backward_training(kN, kC, kHW, xd.data(), dyd.data(), md.data(), sd.data(), gd.data(),
                                           dgamma.data(), dbeta.data(), dx.data());
    return Outputs{{"dgamma", values(dgamma)}, {"dbeta", values(dbeta)}, {"dx", values(dx)}};
  };
  const GradSums g = grad_sums(x, dy, mean, inv_std);
  std::vector<double> dgamma = values(dgamma0), dbeta = values(dbeta0);
  for (std::size_t c = 0; c < static_cast<std::size_t>(kC); ++c) {
    dgamma[c] += g.dy_xhat[c];
    dbeta[c] += g.dy[c];
  }
  conform(device, run,
          {{"dgamma", dgamma, {1e-6, 1e-6}},
           {"dbeta", dbeta, {1e-6, 1e-6}},
           {"dx", input_gradient(x, dy, mean, inv_std, gamma, g, double(kN * kHW)), {1e-5, 1e-5}}});
}
