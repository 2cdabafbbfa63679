// BatchNorm2d with PyTorch's semantics: normalise with the batch's biased variance, update
// running_var with the unbiased one, running = (1 - momentum)·running + momentum·batch.
#include "kolo/models.h"
#include "models/kernels.h"
#include "models/layers/layer_checks.h"
#include "models/cuda/gpu_runtime.h"

namespace kolo::models {
namespace {

// The batch's per-channel mean and Σ(x - mean)² for a stats reducer, through host vectors:
// two passes, each one vector so that SyncBatchNorm's reducer sums it across ranks at once: [Σx per channel |
// count], then [Σ(x - mean)² per channel]. The kernels' per-channel passes return host
// doubles on every device.
struct BatchStatistics {
  std::vector<double> mean, squares;
  double count = 0;
};
BatchStatistics batch_statistics(Kernels& k, const Tensor& input, const BatchNorm2d::StatsReducer& reducer,
                                 const std::string& layer) {
  const int64_t N = input.dim(0), C = input.dim(1), HW = input.dim(2) * input.dim(3);
  const auto channels = static_cast<std::size_t>(C);
  std::vector<double> sums(channels + 1);
  k.channel_sums(N, C, HW, input.data(), sums.data());
  sums[channels] = double(N * HW);
  reducer(sums);
  BatchStatistics s;
  s.count = sums[channels];
  if (s.count <= 1)
    throw Error(StatusCode::InvalidArgument,
                "kolo: " + layer + " in training mode needs more than one value per channel");
  s.mean.resize(channels);
  s.squares.resize(channels);
  for (std::size_t c = 0; c < channels; ++c) s.mean[c] = sums[c] / s.count;
  k.channel_centered_squares(N, C, HW, input.data(), s.mean.data(), s.squares.data());
  reducer(s.squares);
  return s;
}

// grad[c] += (float) sums[c]: the float values go to grad's device and are added there.
void add_sums(Tensor& grad, const double* sums) {
  const int64_t C = grad.numel();
  Tensor values = Tensor::uninitialized({C});
  for (int64_t c = 0; c < C; ++c) values[c] = static_cast<float>(sums[c]);
  const Tensor there = values.to(grad.device());
  kernels(grad.device()).add_into(C, grad.data(), there.data());
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

// Without a stats reducer the statistics stay in the kernels' memory: one call computes
// them (in double, two passes), updates the running statistics and normalises. With one
// (SyncBatchNorm) the per-channel sums come to the host for it, one vector at a time, and
// the rest stays with the kernels.
Tensor BatchNorm2d::forward(const Tensor& input) {
  const int64_t C = options_.channels;
  if (input.ndim() != 4 || input.dim(1) != C)
    throw Error(StatusCode::InvalidArgument, "kolo: " + weight_->name + " expects (N, " + std::to_string(C) +
                                                 ", H, W), got " + shape_string(input.shape()));
  const int64_t N = input.dim(0), HW = input.dim(2) * input.dim(3);
  const Device device = input.device();
  check_device(weight_->value, device, weight_->name, "the input");
  Kernels& k = kernels(device);
  Tensor y = Tensor::uninitialized(input.shape(), device);
  mean_ = Tensor::uninitialized({C}, device);
  inv_std_ = Tensor::uninitialized({C}, device);
  if (is_training() && !reducer_) {
    count_ = double(N * HW);
    if (count_ <= 1)
      throw Error(StatusCode::InvalidArgument, "kolo: " + weight_->name +
                                                   " in training mode needs more than one value per channel");
    k.batchnorm_forward_training(N, C, HW, input.data(), weight_->value.data(), bias_->value.data(), options_.eps,
                                 options_.momentum, running_mean_->data(), running_var_->data(),
                                 num_batches_tracked_->data(), mean_.data(), inv_std_.data(), y.data());
    input_ = input;
    return y;
  }
  if (is_training()) {
    const BatchStatistics s = batch_statistics(k, input, reducer_, weight_->name);
    count_ = s.count;
    k.batchnorm_finish_statistics(C, s.mean.data(), s.squares.data(), count_, options_.eps, options_.momentum,
                                  running_mean_->data(), running_var_->data(), num_batches_tracked_->data(),
                                  mean_.data(), inv_std_.data());
    input_ = input;
  } else {
    input_ = Tensor();  // an eval forward leaves nothing to backward
    k.batchnorm_inference_stats(C, running_mean_->data(), running_var_->data(), options_.eps, mean_.data(),
                                inv_std_.data());
  }
  k.batchnorm_apply(N, C, HW, input.data(), mean_.data(), inv_std_.data(), weight_->value.data(),
                    bias_->value.data(), y.data());
  return y;
}

Tensor BatchNorm2d::backward(const Tensor& grad_output) {
  check_backward(weight_->name, input_.ndim() > 0, grad_output, input_.shape());
  const int64_t C = options_.channels, N = input_.dim(0), HW = input_.dim(2) * input_.dim(3);
  const Device device = input_.device();
  check_device(grad_output, device, weight_->name + "'s output gradient", "the input");
  Kernels& k = kernels(device);
  Tensor dx = Tensor::uninitialized(input_.shape(), device);
  if (!reducer_) {
    k.batchnorm_backward_training(N, C, HW, input_.data(), grad_output.data(), mean_.data(), inv_std_.data(),
                                  weight_->value.data(), weight_->grad.data(), bias_->grad.data(), dx.data());
  } else {
    // Through host vectors, which the reducer sums across ranks. The parameter gradients
    // are this rank's; the input gradient needs the global sums.
    std::vector<double> sums(static_cast<std::size_t>(2 * C));
    k.batchnorm_grad_sums(N, C, HW, input_.data(), grad_output.data(), mean_.data(), inv_std_.data(), sums.data(),
                          sums.data() + C);
    add_sums(bias_->grad, sums.data());
    add_sums(weight_->grad, sums.data() + C);
    reducer_(sums);
    k.batchnorm_backward_input(N, C, HW, input_.data(), grad_output.data(), mean_.data(), inv_std_.data(),
                               weight_->value.data(), sums.data(), sums.data() + C, count_, dx.data());
  }
  input_ = Tensor();
  grad_ready(*weight_);
  grad_ready(*bias_);
  return dx;
}

}  // namespace kolo::models
