// ResNet v1 in torchvision's layout and naming: BasicBlock (18, 34) and Bottleneck with the
// stride on the 3×3 convolution (50, 101, 152, "ResNet v1.5").
#include "kolo/models.h"
#include "models/kernels.h"
#include "nets.h"

namespace kolo::models {
namespace {

std::unique_ptr<Conv2d> conv(int64_t in, int64_t out, int64_t kernel, int64_t stride) {
  return std::make_unique<Conv2d>(Conv2dOptions{.in_channels = in, .out_channels = out, .kernel = kernel,
                                                .stride = stride, .padding = kernel / 2, .bias = false});
}
std::unique_ptr<BatchNorm2d> bn(int64_t channels) {
  return std::make_unique<BatchNorm2d>(BatchNormOptions{.channels = channels});
}

// conv → bn → (relu), the unit every block is made of.
struct ConvBn {
  Conv2d* conv;
  BatchNorm2d* bn;
  ReLU* relu;  // null for the unit before the residual add
  Tensor forward(const Tensor& x) {
    Tensor y = bn->forward(conv->forward(x));
    return relu ? relu->forward(y) : y;
  }
  Tensor backward(const Tensor& g) { return conv->backward(bn->backward(relu ? relu->backward(g) : g)); }
};

class ResidualBlock : public Module {
 public:
  ResidualBlock(int64_t in, int64_t planes, int64_t stride, bool bottleneck) {
    const int64_t out = bottleneck ? planes * 4 : planes;
    if (bottleneck) {
      units_.push_back(unit("1", conv(in, planes, 1, 1), planes, true));
      units_.push_back(unit("2", conv(planes, planes, 3, stride), planes, true));
      units_.push_back(unit("3", conv(planes, out, 1, 1), out, false));
    } else {
      units_.push_back(unit("1", conv(in, planes, 3, stride), planes, true));
      units_.push_back(unit("2", conv(planes, planes, 3, 1), planes, false));
    }
    if (stride != 1 || in != out) {
      auto downsample = std::make_unique<Sequential>();
      downsample->add("0", conv(in, out, 1, stride));
      downsample->add("1", bn(out));
      downsample_ = &add_child("downsample", std::move(downsample));
    }
    relu_ = &add_child("relu", std::make_unique<ReLU>());
  }

  Tensor forward(const Tensor& x) override {
    Tensor y = x;
    for (ConvBn& u : units_) y = u.forward(y);
    kernels(y.device()).add_into(y.numel(), y.data(), (downsample_ ? downsample_->forward(x) : x).data());
    return relu_->forward(y);
  }

  Tensor backward(const Tensor& grad_output) override {
    const Tensor g = relu_->backward(grad_output);
    Tensor dx = g;
    for (auto it = units_.rbegin(); it != units_.rend(); ++it) dx = it->backward(dx);
    const Tensor shortcut = downsample_ ? downsample_->backward(g) : g;
    kernels(dx.device()).add_into(dx.numel(), dx.data(), shortcut.data());
    return dx;
  }

 private:
  ConvBn unit(const std::string& index, std::unique_ptr<Conv2d> c, int64_t channels, bool relu) {
    ConvBn u;
    u.conv = &add_child("conv" + index, std::move(c));
    u.bn = &add_child("bn" + index, bn(channels));
    u.relu = relu ? &add_child("relu" + index, std::make_unique<ReLU>()) : nullptr;
    return u;
  }

  std::vector<ConvBn> units_;
  Sequential* downsample_ = nullptr;
  ReLU* relu_;
};

}  // namespace

std::unique_ptr<Net> resnet(int depth, int64_t classes) {
  const NetSpec spec = resnet_spec(depth);
  auto net = std::make_unique<Net>();
  net->name = "resnet" + std::to_string(depth);
  net->add("conv1", conv(3, 64, 7, 2));
  net->add("bn1", bn(64));
  net->add("relu", std::make_unique<ReLU>());
  net->add("maxpool", std::make_unique<MaxPool2d>(MaxPoolOptions{.kernel = 3, .stride = 2, .padding = 1}));
  int64_t in = 64;
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t planes = int64_t{64} << stage;
    auto layer = std::make_unique<Sequential>();
    for (int b = 0; b < spec.blocks[stage]; ++b) {
      const int64_t stride = (stage > 0 && b == 0) ? 2 : 1;
      layer->add(std::to_string(b), std::make_unique<ResidualBlock>(in, planes, stride, spec.bottleneck));
      in = spec.bottleneck ? planes * 4 : planes;
    }
    net->add("layer" + std::to_string(stage + 1), std::move(layer));
  }
  net->add("avgpool", std::make_unique<GlobalAvgPool>());
  net->add("fc", std::make_unique<Linear>(in, classes));
  return net;
}

}  // namespace kolo::models
