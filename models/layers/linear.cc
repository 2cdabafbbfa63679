#include "kolo/models.h"
#include "models/kernels.h"
#include "models/cuda/gpu_runtime.h"
#include "models/layers/layer_checks.h"

namespace kolo::models {

Linear::Linear(int64_t in_features, int64_t out_features, bool bias) {
  weight_ = &add_parameter("weight", {out_features, in_features});
  if (bias) bias_ = &add_parameter("bias", {out_features});
}

Tensor Linear::forward(const Tensor& input) {
  const int64_t out = weight_->value.dim(0), in = weight_->value.dim(1);
  if (input.ndim() != 2 || input.dim(1) != in)
    throw Error(StatusCode::InvalidArgument, "kolo: " + weight_->name + " expects (N, " + std::to_string(in) +
                                                 "), got " + shape_string(input.shape()));
  check_device(weight_->value, input.device(), weight_->name, "the input");
  Tensor y = Tensor::uninitialized({input.dim(0), out}, input.device());
  kernels(input.device()).linear_forward(input.dim(0), in, out, input.data(), weight_->value.data(),
                           bias_ ? bias_->value.data() : nullptr, y.data());
  input_ = is_training() ? input : Tensor();  // an eval forward leaves nothing to backward
  return y;
}

Tensor Linear::backward(const Tensor& grad_output) {
  const int64_t out = weight_->value.dim(0), in = weight_->value.dim(1);
  check_backward(weight_->name, input_.ndim() > 0, grad_output, {input_.ndim() > 0 ? input_.dim(0) : 0, out});
  check_device(grad_output, input_.device(), weight_->name + "'s output gradient", "the input");
  Tensor dx = needs_input_grad() ? Tensor::uninitialized(input_.shape(), input_.device()) : Tensor();
  kernels(input_.device()).linear_backward(input_.dim(0), in, out, input_.data(), weight_->value.data(), grad_output.data(),
                            needs_input_grad() ? dx.data() : nullptr, weight_->grad.data(), bias_ ? bias_->grad.data() : nullptr);
  input_ = Tensor();
  if (bias_) grad_ready(*bias_);
  grad_ready(*weight_);
  return dx;
}

}  // namespace kolo::models
