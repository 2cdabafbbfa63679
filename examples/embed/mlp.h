// The model: a two-layer perceptron for binary classification, written out by hand with
// its parameters in std::vector<float> (no framework):
//
//   p(x) = sigmoid(w2 · tanh(W1 x + b1) + b2)      loss = mean binary cross-entropy
//
// The same struct holds the gradient, which has the parameters' shapes.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dataset.h"

struct Mlp {
  int inputs = 0, hidden = 0;
  std::vector<float> w1;  // hidden × inputs, row-major
  std::vector<float> b1;  // hidden
  std::vector<float> w2;  // hidden
  std::vector<float> b2;  // 1

  // Every parameter tensor with a stable name, in a fixed order: what a training loop
  // iterates over to update, save or (with kolo) average the parameters.
  std::vector<std::pair<std::string, std::vector<float>*>> tensors();
};

Mlp make_mlp(int inputs, int hidden, uint32_t seed);  // small random weights, zero biases
Mlp zeros_like(const Mlp& model);

struct Metrics {
  float loss = 0.0f;
  float accuracy = 0.0f;  // fraction of samples on the right side of p = 0.5
};

// Forward and backward pass over every sample of `data`: returns the mean loss and
// accuracy, and overwrites `grad` (when not null) with the mean loss's gradient.
Metrics evaluate(const Mlp& model, const Dataset& data, Mlp* grad = nullptr);

// One gradient-descent step: model -= learning_rate * grad, tensor by tensor.
void descend(Mlp& model, Mlp& grad, float learning_rate);

// 64-bit FNV-1a over the bytes of every parameter: equal checksums mean equal weights.
uint64_t checksum(Mlp& model);

// Writes one line per tensor, "name v1 v2 ...", each float with 9 significant digits
// (enough to read it back exactly). Throws std::runtime_error naming the file when it
// cannot be written.
void save_text(Mlp& model, const std::string& path);
