#include "kolo/models.h"

namespace kolo::models {

// Valid (unpadded) convolutions: 28 → 24 → pool 12 → 8 → pool 4, so the dense layer sees
// 64·4·4 = 1024 features: 832 + 51,264 + 10,250 = 62,346 parameters.
std::unique_ptr<Net> mnist_convnet(int64_t classes) {
  auto net = std::make_unique<Net>();
  net->name = "mnist_convnet";
  net->add("conv1", std::make_unique<Conv2d>(Conv2dOptions{.in_channels = 1, .out_channels = 32, .kernel = 5}));
  net->add("relu1", std::make_unique<ReLU>());
  net->add("pool1", std::make_unique<MaxPool2d>(MaxPoolOptions{.kernel = 2, .stride = 2}));
  net->add("conv2", std::make_unique<Conv2d>(Conv2dOptions{.in_channels = 32, .out_channels = 64, .kernel = 5}));
  net->add("relu2", std::make_unique<ReLU>());
  net->add("pool2", std::make_unique<MaxPool2d>(MaxPoolOptions{.kernel = 2, .stride = 2}));
  net->add("flatten", std::make_unique<Flatten>());
  net->add("fc", std::make_unique<Linear>(1024, classes));
  return net;
}

}  // namespace kolo::models
