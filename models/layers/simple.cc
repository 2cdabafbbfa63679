// The parameter-free layers: ReLU, max and average pooling, flatten, dropout, zero padding.
#include <cstring>

#include "kolo/models.h"
#include "models/backend.h"

namespace kolo::models {

Tensor ReLU::forward(const Tensor& input) {
  Tensor y = input;  // shares storage: in place
  compute().relu_forward(y.numel(), y.data());
  if (is_training()) output_ = y;
  return y;
}

Tensor ReLU::backward(const Tensor& grad_output) {
  Tensor dx = Tensor::uninitialized(grad_output.shape());
  compute().relu_backward(dx.numel(), output_.data(), grad_output.data(), dx.data());
  output_ = Tensor();
  return dx;
}

namespace {
PoolShape pool_shape(const MaxPoolOptions& o, const std::vector<int64_t>& shape) {
  if (shape.size() != 4)
    throw Error(StatusCode::InvalidArgument, "kolo: MaxPool2d expects (N, C, H, W), got " + shape_string(shape));
  return {shape[0], shape[1], shape[2], shape[3], o.kernel, o.stride, o.padding};
}
}  // namespace

Tensor MaxPool2d::forward(const Tensor& input) {
  const PoolShape s = pool_shape(options_, input.shape());
  if (s.out_height() <= 0 || s.out_width() <= 0)
    throw Error(StatusCode::InvalidArgument, "kolo: MaxPool2d input " + shape_string(input.shape()) + " is too small");
  Tensor y = Tensor::uninitialized({s.batch, s.channels, s.out_height(), s.out_width()});
  argmax_.resize(static_cast<std::size_t>(y.numel()));
  compute().maxpool_forward(s, input.data(), y.data(), argmax_.data());
  input_shape_ = input.shape();
  return y;
}

Tensor MaxPool2d::backward(const Tensor& grad_output) {
  Tensor dx = Tensor::uninitialized(input_shape_);
  compute().maxpool_backward(pool_shape(options_, input_shape_), grad_output.data(), argmax_.data(), dx.data());
  return dx;
}

Tensor GlobalAvgPool::forward(const Tensor& input) {
  if (input.ndim() != 4)
    throw Error(StatusCode::InvalidArgument, "kolo: GlobalAvgPool expects (N, C, H, W), got " + shape_string(input.shape()));
  const int64_t planes = input.dim(0) * input.dim(1), hw = input.dim(2) * input.dim(3);
  Tensor y = Tensor::uninitialized({input.dim(0), input.dim(1)});
  for (int64_t p = 0; p < planes; ++p) {
    const float* x = input.data() + p * hw;
    double sum = 0;
    for (int64_t j = 0; j < hw; ++j) sum += x[j];
    y[p] = static_cast<float>(sum / double(hw));
  }
  input_shape_ = input.shape();
  return y;
}

Tensor GlobalAvgPool::backward(const Tensor& grad_output) {
  Tensor dx = Tensor::uninitialized(input_shape_);
  const int64_t hw = input_shape_[2] * input_shape_[3];
  for (int64_t p = 0; p < grad_output.numel(); ++p) {
    const float g = grad_output[p] / static_cast<float>(hw);
    float* d = dx.data() + p * hw;
    for (int64_t j = 0; j < hw; ++j) d[j] = g;
  }
  return dx;
}

Tensor Flatten::forward(const Tensor& input) {
  input_shape_ = input.shape();
  return input.reshape({input.dim(0), input.numel() / std::max<int64_t>(1, input.dim(0))});
}

Tensor Flatten::backward(const Tensor& grad_output) { return grad_output.reshape(input_shape_); }

Tensor Dropout::forward(const Tensor& input) {
  if (!is_training() || p_ == 0.0) return input;
  mask_ = Tensor(input.shape());
  Tensor y = Tensor::uninitialized(input.shape());
  std::bernoulli_distribution keep(1.0 - p_);
  const float scale = static_cast<float>(1.0 / (1.0 - p_));
  for (int64_t i = 0; i < input.numel(); ++i) {
    mask_[i] = keep(rng_) ? scale : 0.0f;
    y[i] = input[i] * mask_[i];
  }
  return y;
}

Tensor Dropout::backward(const Tensor& grad_output) {
  if (mask_.empty()) return grad_output;
  Tensor dx = Tensor::uninitialized(grad_output.shape());
  for (int64_t i = 0; i < dx.numel(); ++i) dx[i] = grad_output[i] * mask_[i];
  mask_ = Tensor();
  return dx;
}

Tensor ZeroPad2d::forward(const Tensor& input) {
  const int64_t N = input.dim(0), C = input.dim(1), H = input.dim(2), W = input.dim(3), p = padding_;
  Tensor y({N, C, H + 2 * p, W + 2 * p});
  for (int64_t plane = 0; plane < N * C; ++plane)
    for (int64_t h = 0; h < H; ++h)
      std::memcpy(y.data() + (plane * (H + 2 * p) + h + p) * (W + 2 * p) + p,
                  input.data() + (plane * H + h) * W, sizeof(float) * W);
  return y;
}

Tensor ZeroPad2d::backward(const Tensor& grad_output) {
  const int64_t N = grad_output.dim(0), C = grad_output.dim(1), p = padding_;
  const int64_t H = grad_output.dim(2) - 2 * p, W = grad_output.dim(3) - 2 * p;
  Tensor dx = Tensor::uninitialized({N, C, H, W});
  for (int64_t plane = 0; plane < N * C; ++plane)
    for (int64_t h = 0; h < H; ++h)
      std::memcpy(dx.data() + (plane * H + h) * W,
                  grad_output.data() + (plane * (H + 2 * p) + h + p) * (W + 2 * p) + p, sizeof(float) * W);
  return dx;
}

}  // namespace kolo::models
