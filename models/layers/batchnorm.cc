// BatchNorm2d with PyTorch's semantics: normalise with the batch's biased variance, update
// running_var with the unbiased one, running = (1 - momentum)·running + momentum·batch.
#include <cmath>

#include "kolo/models.h"
#include "models/backend.h"
#include "models/cuda/gpu_runtime.h"

namespace kolo::models {
namespace {

// The batch's per-channel mean and Σ(x - mean)², through host vectors: two passes, each one
// vector so that SyncBatchNorm's reducer sums it across ranks at once: [Σx per channel |
// count], then [Σ(x - mean)² per channel]. Works on either device (the backend's
// channel_sums return host doubles).
struct BatchStatistics {
  std::vector<double> mean, squares;
  double count = 0;
};
BatchStatistics batch_statistics(Backend& backend, const Tensor& input, const BatchNorm2d::StatsReducer& reducer,
                                 const std::string& layer) {
  const int64_t N = input.dim(0), C = input.dim(1), HW = input.dim(2) * input.dim(3);
  const auto channels = static_cast<std::size_t>(C);
  std::vector<double> sums(channels + 1);
  backend.channel_sums(N, C, HW, input.data(), sums.data());
  sums[channels] = double(N * HW);
  if (reducer) reducer(sums);
  BatchStatistics s;
  s.count = sums[channels];
  if (s.count <= 1)
    throw Error(StatusCode::InvalidArgument,
                "kolo: " + layer + " in training mode needs more than one value per channel");
  s.mean.resize(channels);
  s.squares.resize(channels);
  for (std::size_t c = 0; c < channels; ++c) s.mean[c] = sums[c] / s.count;
  backend.channel_centered_squares(N, C, HW, input.data(), s.mean.data(), s.squares.data());
  if (reducer) reducer(s.squares);
  return s;
}

// grad[c] += (float) sums[c], on grad's device (a GPU gets the float values uploaded and
// added there: the same float additions as the host loop).
void add_sums(Tensor& grad, const double* sums) {
  const int64_t C = grad.numel();
  if (grad.device().is_cpu()) {
    for (int64_t c = 0; c < C; ++c) grad[c] += static_cast<float>(sums[c]);
    return;
  }
  Tensor values = Tensor::uninitialized({C});
  for (int64_t c = 0; c < C; ++c) values[c] = static_cast<float>(sums[c]);
  const Tensor uploaded = values.to(grad.device());
  compute(grad.device()).add_into(C, grad.data(), uploaded.data());
}

}  // namespace

BatchNorm2d::BatchNorm2d(const BatchNormOptions& options) : options_(options) {
  weight_ = &add_parameter("weight", {options.channels});
  bias_ = &add_parameter("bias", {options.channels});
  weight_->value.fill(1.0f);
  running_mean_ = &add_buffer("running_mean", Tensor({options.channels}));
  running_var_ = &add_buffer("running_var", Tensor::full({options.channels}, 1.0f));
  num_batches_tracked_ = &add_buffer("num_batches_tracked", Tensor(std::vector<int64_t>{}));
}

Tensor BatchNorm2d::forward(const Tensor& input) {
  const int64_t C = options_.channels;
  if (input.ndim() != 4 || input.dim(1) != C)
    throw Error(StatusCode::InvalidArgument, "kolo: " + weight_->name + " expects (N, " + std::to_string(C) +
                                                 ", H, W), got " + shape_string(input.shape()));
  const int64_t N = input.dim(0), HW = input.dim(2) * input.dim(3);
  check_device(weight_->value, input.device(), weight_->name, "the input");
  if (!input.device().is_cpu()) return forward_on_device(input);
  Tensor y = Tensor::uninitialized(input.shape());
  mean_ = Tensor({C});
  inv_std_ = Tensor({C});
  if (!is_training()) {
    for (int64_t c = 0; c < C; ++c) {
      mean_[c] = (*running_mean_)[c];
      inv_std_[c] = static_cast<float>(1.0 / std::sqrt(double((*running_var_)[c]) + options_.eps));
    }
  } else {
    const BatchStatistics s = batch_statistics(compute(), input, reducer_, weight_->name);
    count_ = s.count;
    const float m = static_cast<float>(options_.momentum);
    for (int64_t c = 0; c < C; ++c) {
      const double var = s.squares[static_cast<std::size_t>(c)] / count_;
      mean_[c] = static_cast<float>(s.mean[static_cast<std::size_t>(c)]);
      inv_std_[c] = static_cast<float>(1.0 / std::sqrt(var + options_.eps));
      (*running_mean_)[c] = (1 - m) * (*running_mean_)[c] + m * mean_[c];
      (*running_var_)[c] = (1 - m) * (*running_var_)[c] + m * static_cast<float>(var * count_ / (count_ - 1));
    }
    (*num_batches_tracked_)[0] += 1;
    input_ = input;
  }
  compute().batchnorm_apply(N, C, HW, input.data(), mean_.data(), inv_std_.data(), weight_->value.data(),
                            bias_->value.data(), y.data());
  return y;
}

Tensor BatchNorm2d::backward(const Tensor& grad_output) {
  const int64_t C = options_.channels, N = input_.dim(0), HW = input_.dim(2) * input_.dim(3);
  check_device(grad_output, input_.device(), weight_->name + "'s output gradient", "the input");
  const Device device = input_.device();
  if (!device.is_cpu() && !reducer_) return backward_on_device(grad_output);
  // Through host vectors: on the CPU, and on a GPU for SyncBatchNorm (its reducer sums
  // host vectors across ranks).
  Backend& backend = compute(device);
  std::vector<double> sums(static_cast<std::size_t>(2 * C));
  backend.batchnorm_grad_sums(N, C, HW, input_.data(), grad_output.data(), mean_.data(), inv_std_.data(),
                              sums.data(), sums.data() + C);
  // The parameter gradients are this rank's; the input gradient needs the global sums.
  add_sums(bias_->grad, sums.data());
  add_sums(weight_->grad, sums.data() + C);
  if (reducer_) reducer_(sums);
  Tensor dx = Tensor::uninitialized(input_.shape(), device);
  backend.batchnorm_backward_input(N, C, HW, input_.data(), grad_output.data(), mean_.data(), inv_std_.data(),
                                   weight_->value.data(), sums.data(), sums.data() + C, count_, dx.data());
  input_ = Tensor();
  grad_ready(*weight_);
  grad_ready(*bias_);
  return dx;
}

// On a GPU the statistics never come to the host (one backend call computes them in double,
// two passes, as above, updates the running statistics and normalises), except with a
// stats reducer (SyncBatchNorm): then the per-channel sums come to the host for it, go back,
// and the rest stays on the device.
Tensor BatchNorm2d::forward_on_device(const Tensor& input) {
  const int64_t C = options_.channels, N = input.dim(0), HW = input.dim(2) * input.dim(3);
  const Device device = input.device();
  Backend& backend = compute(device);
  Tensor y = Tensor::uninitialized(input.shape(), device);
  mean_ = Tensor::uninitialized({C}, device);
  inv_std_ = Tensor::uninitialized({C}, device);
  if (!is_training()) {
    backend.batchnorm_inference_stats(C, running_mean_->data(), running_var_->data(), options_.eps, mean_.data(),
                                      inv_std_.data());
    backend.batchnorm_apply(N, C, HW, input.data(), mean_.data(), inv_std_.data(), weight_->value.data(),
                            bias_->value.data(), y.data());
    return y;
  }
  if (reducer_) {
    const BatchStatistics s = batch_statistics(backend, input, reducer_, weight_->name);
    count_ = s.count;
    backend.batchnorm_finish_statistics(C, s.mean.data(), s.squares.data(), count_, options_.eps, options_.momentum,
                                        running_mean_->data(), running_var_->data(), num_batches_tracked_->data(),
                                        mean_.data(), inv_std_.data());
    backend.batchnorm_apply(N, C, HW, input.data(), mean_.data(), inv_std_.data(), weight_->value.data(),
                            bias_->value.data(), y.data());
    input_ = input;
    return y;
  }
  count_ = double(N * HW);
  if (count_ <= 1)
    throw Error(StatusCode::InvalidArgument, "kolo: " + weight_->name +
                                                 " in training mode needs more than one value per channel");
  backend.batchnorm_forward_training(N, C, HW, input.data(), weight_->value.data(), bias_->value.data(), options_.eps,
                                     options_.momentum, running_mean_->data(), running_var_->data(),
                                     num_batches_tracked_->data(), mean_.data(), inv_std_.data(), y.data());
  input_ = input;
  return y;
}

Tensor BatchNorm2d::backward_on_device(const Tensor& grad_output) {
  const int64_t C = options_.channels, N = input_.dim(0), HW = input_.dim(2) * input_.dim(3);
  Tensor dx = Tensor::uninitialized(input_.shape(), input_.device());
  compute(input_.device()).batchnorm_backward_training(N, C, HW, input_.data(), grad_output.data(), mean_.data(),
                                                       inv_std_.data(), weight_->value.data(), weight_->grad.data(),
                                                       bias_->grad.data(), dx.data());
  input_ = Tensor();
  grad_ready(*weight_);
  grad_ready(*bias_);
  return dx;
}

}  // namespace kolo::models
