#include "kolo/models.h"
#include "models/kernels.h"
#include "models/cuda/gpu_runtime.h"
#include "models/layers/layer_checks.h"

namespace kolo::models {

Conv2d::Conv2d(const Conv2dOptions& options) : options_(options) {
  check_window("Conv2d", options.kernel, options.stride, options.padding, int64_t{1} << 30);
  weight_ = &add_parameter("weight", {options.out_channels, options.in_channels, options.kernel, options.kernel});
  if (options.bias) bias_ = &add_parameter("bias", {options.out_channels});
}

namespace {
ConvShape conv_shape(const Conv2dOptions& o, const Tensor& x, const std::string& name) {
  if (x.ndim() != 4 || x.dim(1) != o.in_channels)
    throw Error(StatusCode::InvalidArgument, "kolo: " + name + " expects (N, " +
                                                 std::to_string(o.in_channels) + ", H, W), got " +
                                                 shape_string(x.shape()));
  check_window_fits(name, x.shape(), o.kernel, o.padding);
  return {x.dim(0), x.dim(1), x.dim(2), x.dim(3), o.out_channels, o.kernel, o.stride, o.padding};
}
}  // namespace

Tensor Conv2d::forward(const Tensor& input) {
  const ConvShape s = conv_shape(options_, input, weight_->name);
  check_device(weight_->value, input.device(), weight_->name, "the input");
  Tensor y = Tensor::uninitialized({s.batch, s.out_channels, s.out_height(), s.out_width()}, input.device());
  if (s.batch > 0)  // an empty batch has nothing to compute (the kernels divide work by it)
    kernels(input.device()).conv2d_forward(s, input.data(), weight_->value.data(),
                                           bias_ ? bias_->value.data() : nullptr, y.data());
  input_ = is_training() ? input : Tensor();  // an eval forward leaves nothing to backward
  return y;
}

Tensor Conv2d::backward(const Tensor& grad_output) {
  ConvShape s{};
  std::vector<int64_t> output_shape;  // none before a forward
  if (input_.ndim() > 0) {
    s = conv_shape(options_, input_, weight_->name);
    output_shape = {s.batch, s.out_channels, s.out_height(), s.out_width()};
  }
  check_backward(weight_->name, input_.ndim() > 0, grad_output, output_shape);
  check_device(grad_output, input_.device(), weight_->name + "'s output gradient", "the input");
  Tensor dx = needs_input_grad() ? Tensor::uninitialized(input_.shape(), input_.device()) : Tensor();
  if (s.batch > 0)  // gradients add up: an empty batch adds nothing
    kernels(input_.device()).conv2d_backward(s, input_.data(), weight_->value.data(), grad_output.data(),
                                              needs_input_grad() ? dx.data() : nullptr, weight_->grad.data(),
                                              bias_ ? bias_->grad.data() : nullptr);
  input_ = Tensor();
  if (bias_) grad_ready(*bias_);
  grad_ready(*weight_);
  return dx;
}

}  // namespace kolo::models
