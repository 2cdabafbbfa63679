#include "resnet50_gradients.h"

#include <algorithm>

int64_t GradientTensor::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Gradients::Gradients() {
  for (const GradientTensor& t : tensors) data.emplace_back(t.elements(), 1.0f);
}

void Gradients::refill_if_large() {
  if (data[0][0] < 1e30f) return;
  for (auto& d : data) std::fill(d.begin(), d.end(), 1.0f);
}

std::vector<GradientTensor> resnet50_gradients_backprop_order() {
  std::vector<GradientTensor> forward;
  auto conv = [&](const std::string& name, int64_t out, int64_t in, int64_t k) {
    forward.push_back({name + ".weight", {out, in, k, k}});
  };
  auto bn = [&](const std::string& name, int64_t channels) {
    forward.push_back({name + ".weight", {channels}});
    forward.push_back({name + ".bias", {channels}});
  };
  conv("conv1", 64, 3, 7);
  bn("bn1", 64);
  const int blocks[4] = {3, 4, 6, 3};
  int64_t in = 64;
  for (int layer = 0; layer < 4; ++layer) {
    const int64_t planes = int64_t{64} << layer;
    for (int b = 0; b < blocks[layer]; ++b) {
      const std::string p = "layer" + std::to_string(layer + 1) + "." + std::to_string(b);
      conv(p + ".conv1", planes, in, 1);
      bn(p + ".bn1", planes);
      conv(p + ".conv2", planes, planes, 3);
      bn(p + ".bn2", planes);
      conv(p + ".conv3", planes * 4, planes, 1);
      bn(p + ".bn3", planes * 4);
      if (b == 0) {
        conv(p + ".downsample.0", planes * 4, in, 1);
        bn(p + ".downsample.1", planes * 4);
      }
      in = planes * 4;
    }
  }
  forward.push_back({"fc.weight", {1000, 2048}});
  forward.push_back({"fc.bias", {1000}});
  std::reverse(forward.begin(), forward.end());
  return forward;
}
