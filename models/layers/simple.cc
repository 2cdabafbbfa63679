// The parameter-free layers: ReLU, max and average pooling, flatten, dropout, zero padding.
#include <cstring>

#include "kolo/models.h"
#include "models/kernels.h"
#include "models/cuda/gpu_runtime.h"
#include "models/layers/layer_checks.h"

namespace kolo::models {

Tensor ReLU::forward(const Tensor& input) {
  Tensor y = input;  // shares storage: in place
  kernels(y.device()).relu_forward(y.numel(), y.data());
  output_ = is_training() ? y : Tensor();  // an eval forward leaves nothing to backward
  return y;
}

Tensor ReLU::backward(const Tensor& grad_output) {
  check_backward("ReLU", output_.ndim() > 0, grad_output, output_.shape());
  check_device(grad_output, output_.device(), "ReLU's output gradient", "its output");
  Tensor dx = Tensor::uninitialized(grad_output.shape(), grad_output.device());
  kernels(dx.device()).relu_backward(dx.numel(), output_.data(), grad_output.data(), dx.data());
  output_ = Tensor();
  return dx;
}

namespace {
PoolShape pool_shape(const MaxPoolOptions& o, const std::vector<int64_t>& shape) {
  if (shape.size() != 4)
    throw Error(StatusCode::InvalidArgument, "kolo: MaxPool2d expects (N, C, H, W), got " + shape_string(shape));
  return {shape[0], shape[1], shape[2], shape[3], o.kernel, o.stride, o.padding};
}
// argmax_ keeps int32 indices in a float tensor's 4-byte words.
int32_t* indices(Tensor& t) { return reinterpret_cast<int32_t*>(t.data()); }
void check_planes(const Tensor& t, const char* layer) {
  if (t.ndim() != 4)
    throw Error(StatusCode::InvalidArgument, std::string("kolo: ") + layer + " expects (N, C, H, W), got " +
                                                 shape_string(t.shape()));
}
}  // namespace

// As PyTorch: padding beyond half the kernel would make windows of padding alone, whose
// maximum is no input element.
MaxPool2d::MaxPool2d(const MaxPoolOptions& options) : options_(options) {
  check_window("MaxPool2d", options.kernel, options.stride, options.padding, options.kernel / 2);
}

Tensor MaxPool2d::forward(const Tensor& input) {
  const PoolShape s = pool_shape(options_, input.shape());
  check_window_fits("MaxPool2d", input.shape(), s.kernel, s.padding);
  Tensor y = Tensor::uninitialized({s.batch, s.channels, s.out_height(), s.out_width()}, input.device());
  if (argmax_.numel() != y.numel() || !(argmax_.device() == y.device()))
    argmax_ = Tensor::uninitialized({y.numel()}, y.device());
  kernels(input.device()).maxpool_forward(s, input.data(), y.data(), indices(argmax_));
  input_shape_ = input.shape();
  return y;
}

Tensor MaxPool2d::backward(const Tensor& grad_output) {
  std::vector<int64_t> output_shape;  // none before a forward
  if (!input_shape_.empty()) {
    const PoolShape s = pool_shape(options_, input_shape_);
    output_shape = {s.batch, s.channels, s.out_height(), s.out_width()};
  }
  check_backward("MaxPool2d", !input_shape_.empty(), grad_output, output_shape);
  check_device(grad_output, argmax_.device(), "MaxPool2d's output gradient", "its input");
  Tensor dx = Tensor::uninitialized(input_shape_, grad_output.device());
  kernels(dx.device()).maxpool_backward(pool_shape(options_, input_shape_), grad_output.data(), indices(argmax_),
                                        dx.data());
  return dx;
}

Tensor GlobalAvgPool::forward(const Tensor& input) {
  check_planes(input, "GlobalAvgPool");
  const int64_t planes = input.dim(0) * input.dim(1), hw = input.dim(2) * input.dim(3);
  Tensor y = Tensor::uninitialized({input.dim(0), input.dim(1)}, input.device());
  kernels(input.device()).global_avg_pool_forward(planes, hw, input.data(), y.data());
  input_shape_ = input.shape();
  return y;
}

Tensor GlobalAvgPool::backward(const Tensor& grad_output) {
  const bool saved = !input_shape_.empty();
  check_backward("GlobalAvgPool", saved, grad_output,
                 saved ? std::vector<int64_t>{input_shape_[0], input_shape_[1]} : std::vector<int64_t>{});
  Tensor dx = Tensor::uninitialized(input_shape_, grad_output.device());
  kernels(dx.device()).global_avg_pool_backward(grad_output.numel(), input_shape_[2] * input_shape_[3],
                                                grad_output.data(), dx.data());
  return dx;
}

Tensor Flatten::forward(const Tensor& input) {
  input_shape_ = input.shape();
  int64_t features = 1;  // from the shape, not numel / N: an empty batch keeps its feature count
  for (int i = 1; i < input.ndim(); ++i) features *= input.dim(i);
  return input.reshape({input.dim(0), features});
}

Tensor Flatten::backward(const Tensor& grad_output) { return grad_output.reshape(input_shape_); }

// The mask is drawn on the host on every device, from the layer's generator in element
// order: a GPU run drops exactly the elements a CPU run with the same seed drops. On a GPU
// the mask is uploaded (the copy stream, overlapping the host's next work) and applied there.
Dropout::Dropout(double p, uint64_t seed) : p_(p), rng_(seed) {
  if (!(p >= 0.0 && p <= 1.0))
    throw Error(StatusCode::InvalidArgument,
                "kolo: Dropout's probability must be from 0 to 1, not " + std::to_string(p));
}

Tensor Dropout::forward(const Tensor& input) {
  if (!is_training() || p_ == 0.0) {
    mask_ = Tensor();  // backward is the identity too
    return input;
  }
  Tensor mask = Tensor::uninitialized(input.shape());
  std::bernoulli_distribution keep(1.0 - p_);
  const float scale = static_cast<float>(1.0 / (1.0 - p_));
  for (int64_t i = 0; i < mask.numel(); ++i) mask[i] = keep(rng_) ? scale : 0.0f;
  mask_ = mask.to(input.device());
  Tensor y = Tensor::uninitialized(input.shape(), input.device());
  apply_mask(input, y);
  return y;
}

Tensor Dropout::backward(const Tensor& grad_output) {
  if (mask_.empty()) return grad_output;
  check_device(grad_output, mask_.device(), "Dropout's output gradient", "its mask");
  if (grad_output.numel() != mask_.numel())
    throw Error(StatusCode::InvalidArgument, "kolo: Dropout's output gradient " + shape_string(grad_output.shape()) +
                                                 " does not match its input " + shape_string(mask_.shape()));
  Tensor dx = Tensor::uninitialized(grad_output.shape(), grad_output.device());
  apply_mask(grad_output, dx);
  mask_ = Tensor();
  return dx;
}

// out = in · mask, element by element (in float32 on every device: the same products).
void Dropout::apply_mask(const Tensor& in, Tensor& out) const {
  kernels(in.device()).multiply(in.numel(), in.data(), mask_.data(), out.data());
}

Tensor ZeroPad2d::forward(const Tensor& input) {
  check_planes(input, "ZeroPad2d");
  const int64_t N = input.dim(0), C = input.dim(1), H = input.dim(2), W = input.dim(3), p = padding_;
  Tensor y = Tensor::uninitialized({N, C, H + 2 * p, W + 2 * p}, input.device());
  kernels(input.device()).zero_pad_forward(N * C, H, W, p, input.data(), y.data());
  return y;
}

Tensor ZeroPad2d::backward(const Tensor& grad_output) {
  check_planes(grad_output, "ZeroPad2d");
  const int64_t N = grad_output.dim(0), C = grad_output.dim(1), p = padding_;
  const int64_t H = grad_output.dim(2) - 2 * p, W = grad_output.dim(3) - 2 * p;
  Tensor dx = Tensor::uninitialized({N, C, H, W}, grad_output.device());
  kernels(dx.device()).zero_pad_backward(N * C, H, W, p, grad_output.data(), dx.data());
  return dx;
}

}  // namespace kolo::models
