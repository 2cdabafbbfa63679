#include "mlp.h"

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>

std::vector<std::pair<std::string, std::vector<float>*>> Mlp::tensors() {
  return {{"w1", &w1}, {"b1", &b1}, {"w2", &w2}, {"b2", &b2}};
}

Mlp make_mlp(int inputs, int hidden, uint32_t seed) {
  Mlp m;
  m.inputs = inputs;
  m.hidden = hidden;
  std::mt19937 rng(seed);
  // Glorot-style scale keeps tanh out of saturation at the start.
  std::normal_distribution<float> w1_init(0.0f, 1.0f / std::sqrt(static_cast<float>(inputs)));
  std::normal_distribution<float> w2_init(0.0f, 1.0f / std::sqrt(static_cast<float>(hidden)));
  m.w1.resize(static_cast<std::size_t>(hidden) * inputs);
  for (float& w : m.w1) w = w1_init(rng);
  m.w2.resize(static_cast<std::size_t>(hidden));
  for (float& w : m.w2) w = w2_init(rng);
  m.b1.assign(static_cast<std::size_t>(hidden), 0.0f);
  m.b2.assign(1, 0.0f);
  return m;
}

Mlp zeros_like(const Mlp& model) {
  Mlp z = model;
  for (auto& [name, t] : z.tensors()) std::fill(t->begin(), t->end(), 0.0f);
  return z;
}

Metrics evaluate(const Mlp& model, const Dataset& data, Mlp* grad) {
  const int n = data.samples(), in = model.inputs, hid = model.hidden;
  if (grad) *grad = zeros_like(model);
  std::vector<float> h(static_cast<std::size_t>(hid));
  double loss = 0.0;
  int correct = 0;
  for (int i = 0; i < n; ++i) {
    const float* x = data.row(i);
    float logit = model.b2[0];
    for (int k = 0; k < hid; ++k) {
      float a = model.b1[k];
      const float* w1_row = model.w1.data() + static_cast<std::size_t>(k) * in;
      for (int j = 0; j < in; ++j) a += w1_row[j] * x[j];
      h[k] = std::tanh(a);
      logit += model.w2[k] * h[k];
    }
    const float y = data.y[i];
    // Cross-entropy from the logit directly: log(1 + e^z) - y z, stable for any z.
    loss += std::max(logit, 0.0f) - y * logit + std::log1p(std::exp(-std::abs(logit)));
    correct += (logit > 0.0f) == (y > 0.5f);
    if (!grad) continue;

    // d loss / d logit = sigmoid(logit) - y; the 1/n of the mean is applied per sample.
    const float dlogit = (1.0f / (1.0f + std::exp(-logit)) - y) / static_cast<float>(n);
    grad->b2[0] += dlogit;
    for (int k = 0; k < hid; ++k) {
      grad->w2[k] += dlogit * h[k];
      const float da = dlogit * model.w2[k] * (1.0f - h[k] * h[k]);
      grad->b1[k] += da;
      float* w1_grad = grad->w1.data() + static_cast<std::size_t>(k) * in;
      for (int j = 0; j < in; ++j) w1_grad[j] += da * x[j];
    }
  }
  return {static_cast<float>(loss / n), static_cast<float>(correct) / static_cast<float>(n)};
}

void descend(Mlp& model, Mlp& grad, float learning_rate) {
  auto params = model.tensors(), grads = grad.tensors();
  for (std::size_t t = 0; t < params.size(); ++t) {
    std::vector<float>& p = *params[t].second;
    const std::vector<float>& g = *grads[t].second;
    for (std::size_t i = 0; i < p.size(); ++i) p[i] -= learning_rate * g[i];
  }
}

uint64_t checksum(Mlp& model) {
  uint64_t hash = 14695981039346656037ull;
  for (auto& [name, t] : model.tensors()) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(t->data());
    for (std::size_t i = 0; i < t->size() * sizeof(float); ++i)
      hash = (hash ^ bytes[i]) * 1099511628211ull;
  }
  return hash;
}

void save_text(Mlp& model, const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (!file)
    throw std::runtime_error("cannot write the weights to '" + path + "': " + std::strerror(errno));
  for (auto& [name, t] : model.tensors()) {
    std::fprintf(file, "%s", name.c_str());
    for (float v : *t) std::fprintf(file, " %.9g", v);
    std::fprintf(file, "\n");
  }
  if (std::fclose(file) != 0)
    throw std::runtime_error("cannot write the weights to '" + path + "'");
}
