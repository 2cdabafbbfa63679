// ResNetV2 in Keras' layout (tf.keras.applications.ResNet50V2 and friends): pre-activation
// blocks, the stride in the last block of each stack, BN epsilon 1.001e-5 and Keras'
// momentum 0.99 (PyTorch convention: 0.01). Names follow Keras' layer names with
// PyTorch-style suffixes: conv2_block1_preact_bn.weight, conv2_block1_1_conv.weight, ...
#include "kolo/models.h"
#include "models/kernels.h"
#include "nets.h"

namespace kolo::models {
namespace {

constexpr double kEps = 1.001e-5;
constexpr double kMomentum = 0.01;

std::unique_ptr<BatchNorm2d> bn(int64_t channels) {
  return std::make_unique<BatchNorm2d>(BatchNormOptions{.channels = channels, .eps = kEps, .momentum = kMomentum});
}
std::unique_ptr<Conv2d> conv(int64_t in, int64_t out, int64_t kernel, int64_t stride, bool bias) {
  return std::make_unique<Conv2d>(Conv2dOptions{.in_channels = in, .out_channels = out, .kernel = kernel,
                                                .stride = stride, .padding = kernel / 2, .bias = bias});
}

class PreactBlock : public Module {
 public:
  PreactBlock(const std::string& name, int64_t in, int64_t filters, int64_t stride, bool conv_shortcut)
      : stride_(stride) {
    preact_bn_ = &add_child(name + "_preact_bn", bn(in));
    preact_relu_ = &add_child(name + "_preact_relu", std::make_unique<ReLU>());
    if (conv_shortcut) shortcut_conv_ = &add_child(name + "_0_conv", conv(in, 4 * filters, 1, stride, true));
    else if (stride > 1) shortcut_pool_ = &add_child(name + "_shortcut_pool", std::make_unique<MaxPool2d>(MaxPoolOptions{.kernel = 1, .stride = stride}));
    conv1_ = &add_child(name + "_1_conv", conv(in, filters, 1, 1, false));
    bn1_ = &add_child(name + "_1_bn", bn(filters));
    relu1_ = &add_child(name + "_1_relu", std::make_unique<ReLU>());
    conv2_ = &add_child(name + "_2_conv", conv(filters, filters, 3, stride, false));
    bn2_ = &add_child(name + "_2_bn", bn(filters));
    relu2_ = &add_child(name + "_2_relu", std::make_unique<ReLU>());
    conv3_ = &add_child(name + "_3_conv", conv(filters, 4 * filters, 1, 1, true));
  }

  Tensor forward(const Tensor& x) override {
    const Tensor preact = preact_relu_->forward(preact_bn_->forward(x));
    const Tensor shortcut = shortcut_conv_ ? shortcut_conv_->forward(preact)
                            : shortcut_pool_ ? shortcut_pool_->forward(x)
                                             : x;
    Tensor y = relu1_->forward(bn1_->forward(conv1_->forward(preact)));
    y = conv3_->forward(relu2_->forward(bn2_->forward(conv2_->forward(y))));
    kernels(y.device()).add_into(y.numel(), y.data(), shortcut.data());
    return y;
  }

  Tensor backward(const Tensor& g) override {
    Tensor d = conv3_->backward(g);
    d = conv2_->backward(bn2_->backward(relu2_->backward(d)));
    Tensor d_preact = conv1_->backward(bn1_->backward(relu1_->backward(d)));
    if (shortcut_conv_) {
      const Tensor d_shortcut = shortcut_conv_->backward(g);
      kernels(d_preact.device()).add_into(d_preact.numel(), d_preact.data(), d_shortcut.data());
    }
    Tensor dx = preact_bn_->backward(preact_relu_->backward(d_preact));
    if (!shortcut_conv_) {
      const Tensor d_shortcut = shortcut_pool_ ? shortcut_pool_->backward(g) : g;
      kernels(dx.device()).add_into(dx.numel(), dx.data(), d_shortcut.data());
    }
    return dx;
  }

 private:
  int64_t stride_;
  BatchNorm2d* preact_bn_;
  ReLU* preact_relu_;
  Conv2d* shortcut_conv_ = nullptr;
  MaxPool2d* shortcut_pool_ = nullptr;
  Conv2d *conv1_, *conv2_, *conv3_;
  BatchNorm2d *bn1_, *bn2_;
  ReLU *relu1_, *relu2_;
};

}  // namespace

std::unique_ptr<Net> resnet_v2(int depth, int64_t classes) {
  const NetSpec spec = resnet_spec(depth);
  if (!spec.bottleneck)
    throw Error(StatusCode::InvalidArgument, "kolo: ResNetV2 comes in depths 50, 101 and 152, not " + std::to_string(depth));
  auto net = std::make_unique<Net>();
  net->name = "resnet" + std::to_string(depth) + "v2";
  net->add("conv1_conv", conv(3, 64, 7, 2, true));
  net->add("pool1_pad", std::make_unique<ZeroPad2d>(1));  // Keras pads with zeros before pooling
  net->add("pool1_pool", std::make_unique<MaxPool2d>(MaxPoolOptions{.kernel = 3, .stride = 2}));
  int64_t in = 64;
  for (int stack = 0; stack < 4; ++stack) {
    const int64_t filters = int64_t{64} << stack;
    const std::string stack_name = "conv" + std::to_string(stack + 2);
    const int blocks = spec.blocks[stack];
    for (int b = 1; b <= blocks; ++b) {
      const int64_t stride = (b == blocks && stack < 3) ? 2 : 1;
      // Unnamed: the block's children already carry Keras' full layer names.
      net->add("", std::make_unique<PreactBlock>(stack_name + "_block" + std::to_string(b), in, filters,
                                                  stride, b == 1));
      in = 4 * filters;
    }
  }
  net->add("post_bn", bn(in));
  net->add("post_relu", std::make_unique<ReLU>());
  net->add("avg_pool", std::make_unique<GlobalAvgPool>());
  net->add("predictions", std::make_unique<Linear>(in, classes));
  return net;
}

}  // namespace kolo::models
