#include "kolo/models.h"
#include "models/kernels.h"
#include "models/cuda/gpu_runtime.h"

namespace kolo::models {

Conv2d::Conv2d(const Conv2dOptions& options) : options_(options) {
  weight_ = &add_parameter("weight", {options.out_channels, options.in_channels, options.kernel, options.kernel});
  if (options.bias) bias_ = &add_parameter("bias", {options.out_channels});
}

namespace {
ConvShape conv_shape(const Conv2dOptions& o, const Tensor& x, const std::string& name) {
  if (x.ndim() != 4 || x.dim(1) != o.in_channels)
    throw Error(StatusCode::InvalidArgument, "kolo: " + name + " expects (N, " +
                                                 std::to_string(o.in_channels) + ", H, W), got " +
                                                 shape_string(x.shape()));
  ConvShape s{x.dim(0), x.dim(1), x.dim(2), x.dim(3), o.out_channels, o.kernel, o.stride, o.padding};
  if (s.out_height() <= 0 || s.out_width() <= 0)
    throw Error(StatusCode::InvalidArgument, "kolo: " + name + ": input " + shape_string(x.shape()) +
                                                 " is smaller than the kernel");
  return s;
}
}  // namespace

Tensor Conv2d::forward(const Tensor& input) {
  const ConvShape s = conv_shape(options_, input, weight_->name);
  check_device(weight_->value, input.device(), weight_->name, "the input");
  Tensor y = Tensor::uninitialized({s.batch, s.out_channels, s.out_height(), s.out_width()}, input.device());
  if (s.batch > 0)  // an empty batch has nothing to compute (the kernels divide work by it)
    kernels(input.device()).conv2d_forward(s, input.data(), weight_->value.data(),
                                           bias_ ? bias_->value.data() : nullptr, y.data());
  if (is_training()) input_ = input;
  return y;
}

Tensor Conv2d::backward(const Tensor& grad_output) {
  const ConvShape s = conv_shape(options_, input_, weight_->name);
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
