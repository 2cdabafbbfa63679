// The gradient set of torchvision's ResNet-50 (1000 classes): its 161 parameter tensors,
// 25,557,032 float32 values, in the order backprop produces them (last layer first).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

struct GradientTensor {
  std::string name;
  std::vector<int64_t> shape;
  int64_t elements() const;
};

std::vector<GradientTensor> resnet50_gradients_backprop_order();

// One copy of the set, every value 1. Sums in place grow by a factor of the ranks every
// step: refilled with ones (between timed runs) long before they could overflow.
struct Gradients {
  std::vector<GradientTensor> tensors = resnet50_gradients_backprop_order();
  std::vector<std::vector<float>> data;
  Gradients();
  void refill_if_large();
};
