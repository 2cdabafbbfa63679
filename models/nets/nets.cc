// Net lookup by name and the reference frameworks' initialisation.
#include <cmath>

#include "kolo/models.h"
#include "nets.h"

namespace kolo::models {

NetSpec resnet_spec(int depth) {
  switch (depth) {
    case 18: return {{2, 2, 2, 2}, false};
    case 34: return {{3, 4, 6, 3}, false};
    case 50: return {{3, 4, 6, 3}, true};
    case 101: return {{3, 4, 23, 3}, true};
    case 152: return {{3, 8, 36, 3}, true};
    default:
      throw Error(StatusCode::InvalidArgument,
                  "kolo: no ResNet of depth " + std::to_string(depth) + " (18, 34, 50, 101 or 152)");
  }
}

std::unique_ptr<Net> make_net(const std::string& name, int64_t classes) {
  if (name == "mnist_convnet") return mnist_convnet(classes);
  for (int depth : {18, 34, 50, 101, 152}) {
    if (name == "resnet" + std::to_string(depth)) return resnet(depth, classes);
    if (depth >= 50 && name == "resnet" + std::to_string(depth) + "v2") return resnet_v2(depth, classes);
  }
  throw Error(StatusCode::InvalidArgument,
              "kolo: unknown model '" + name +
                  "' (mnist_convnet, resnet18/34/50/101/152, resnet50v2/101v2/152v2)");
}

namespace {

// Draws on the host (the same numbers wherever the tensor lives), then copies to a GPU.
template <typename Distribution>
void fill_random(Tensor& t, Distribution d, std::mt19937_64& rng) {
  Tensor host = t.device().is_cpu() ? t : Tensor::uninitialized(t.shape());
  for (int64_t i = 0; i < host.numel(); ++i) host[i] = static_cast<float>(d(rng));
  if (!t.device().is_cpu()) t.copy_from(host);
}

void fill_uniform(Tensor& t, double bound, std::mt19937_64& rng) {
  fill_random(t, std::uniform_real_distribution<double>(-bound, bound), rng);
}

void fill_normal(Tensor& t, double stddev, std::mt19937_64& rng) {
  fill_random(t, std::normal_distribution<double>(0.0, stddev), rng);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// fan_in, fan_out of a weight (out, in[, k, k]).
std::pair<double, double> fans(const Tensor& w) {
  double receptive = 1;
  for (int i = 2; i < w.ndim(); ++i) receptive *= double(w.dim(i));
  return {double(w.dim(1)) * receptive, double(w.dim(0)) * receptive};
}

}  // namespace

void initialize(Net& net, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const bool keras = ends_with(net.name, "v2");
  const bool torchvision = !keras && net.name.rfind("resnet", 0) == 0;
  for (Parameter* p : net.parameters()) {
    Tensor& v = p->value;
    p->grad.fill(0.0f);
    if (v.ndim() == 1 && !ends_with(p->name, "bias")) {  // batch-norm scale
      v.fill(1.0f);
    } else if (v.ndim() == 1) {
      if (keras || torchvision || p->name.find("bn") != std::string::npos) {
        v.fill(0.0f);  // Keras biases, BN shifts
      } else {
        // PyTorch's default bias: U(±1/sqrt(fan_in)) of its layer's weight.
        const std::string weight = p->name.substr(0, p->name.size() - 4) + "weight";
        const Parameter* w = net.find_parameter(weight);
        fill_uniform(v, w ? 1.0 / std::sqrt(fans(w->value).first) : 0.0, rng);
      }
    } else {
      const auto [fan_in, fan_out] = fans(v);
      if (keras) fill_uniform(v, std::sqrt(6.0 / (fan_in + fan_out)), rng);          // Glorot uniform
      else if (torchvision && v.ndim() == 4) fill_normal(v, std::sqrt(2.0 / fan_out), rng);  // Kaiming, fan_out
      else fill_uniform(v, 1.0 / std::sqrt(fan_in), rng);  // PyTorch default: kaiming_uniform(a=√5)
    }
  }
  // torchvision's fc bias keeps PyTorch's default, not zero.
  if (torchvision)
    if (Parameter* b = net.find_parameter("fc.bias")) {
      const Parameter* w = net.find_parameter("fc.weight");
      fill_uniform(b->value, 1.0 / std::sqrt(fans(w->value).first), rng);
    }
  for (auto& [name, buffer] : net.buffers()) {
    if (ends_with(name, "running_var")) buffer->fill(1.0f);
    else buffer->fill(0.0f);
  }
}

}  // namespace kolo::models
