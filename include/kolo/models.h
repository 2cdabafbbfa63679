// kolo's model layer: tensors, layers with explicit forward/backward, the MNIST conv net
// and ResNets, losses, optimizers, checkpoints and data loading — the thin layer that
// kolo's examples and DistributedOptimizer stand on. It talks to the runtime only through
// include/kolo/kolo.h, as any outside training loop would.
//
//   kolo::models::ResNet net = kolo::models::resnet18(/*classes=*/10);
//   kolo::models::SGD sgd(net.parameters(), {.lr = 0.1, .momentum = 0.9});
//   Tensor logits = net.forward(images);
//   LossResult loss = softmax_cross_entropy(logits, labels);
//   net.backward(loss.grad);    // gradients announce themselves as they are computed
//   sgd.step();
//
// Layout is NCHW float32 throughout. Compute goes through the model layer's kernels (the
// CPU's, or a GPU's for CUDA tensors): layers never loop over pixels themselves.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kolo/kolo.h"

namespace kolo::models {

// ---- Tensor ----------------------------------------------------------------------------

// A float32 tensor with shared storage: copies share memory (as in PyTorch); clone()
// makes an independent copy. Storage is on a device: the CPU (64-byte aligned host memory,
// the default) or a CUDA GPU (from kolo's caching allocator; needs a build with CUDA).
// Element access (operator[], and data() dereferenced by the host) is for CPU tensors;
// to(Device) moves a copy between devices.
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::vector<int64_t> shape, Device device = Device::cpu());  // zero-filled
  static Tensor zeros(std::vector<int64_t> shape, Device device = Device::cpu()) {
    return Tensor(std::move(shape), device);
  }
  // Contents undefined: for outputs that a kernel overwrites completely.
  static Tensor uninitialized(std::vector<int64_t> shape, Device device = Device::cpu());
  static Tensor full(std::vector<int64_t> shape, float value, Device device = Device::cpu());
  static Tensor from(std::vector<int64_t> shape, const std::vector<float>& values);  // on the CPU
  // A CPU tensor over memory kolo did not allocate (a segment the node's ranks share):
  // data is storage.get(), and storage's owner keeps it alive while any copy exists.
  static Tensor adopt(std::vector<int64_t> shape, std::shared_ptr<float> storage);

  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t dim(int i) const { return shape_.at(static_cast<std::size_t>(i < 0 ? i + ndim() : i)); }
  int ndim() const { return static_cast<int>(shape_.size()); }
  int64_t numel() const { return numel_; }
  bool empty() const { return numel_ == 0; }
  Device device() const { return device_; }
  bool is_cuda() const { return device_.kind == Device::Kind::CUDA; }

  float* data() { return data_; }
  const float* data() const { return data_; }
  float& operator[](int64_t i) { return data_[i]; }  // CPU tensors only
  float operator[](int64_t i) const { return data_[i]; }

  Tensor clone() const;  // on the same device
  // This tensor if it is on `device` already, else a copy there. From the CPU to a GPU the
  // copy is staged through pinned memory, so `*this` may change right after; from a GPU to
  // the CPU it waits for the GPU's pending work.
  Tensor to(Device device) const;
  Tensor cpu() const { return to(Device::cpu()); }
  // Same storage, new shape with the same number of elements.
  Tensor reshape(std::vector<int64_t> shape) const;
  void fill(float value);
  void copy_from(const Tensor& other);  // same numel, any devices
  bool same_shape(const Tensor& other) const { return shape_ == other.shape_; }

  // A view for the runtime's collectives (kolo::allreduce_async and friends).
  TensorView view();

 private:
  std::shared_ptr<float> storage_;
  float* data_ = nullptr;
  std::vector<int64_t> shape_;
  int64_t numel_ = 0;
  Device device_;
};

std::string shape_string(const std::vector<int64_t>& shape);

// ---- Parameters and modules ---------------------------------------------------------------

struct Parameter {
  std::string name;  // full name, torchvision style: "layer1.0.conv1.weight"
  Tensor value;
  Tensor grad;       // same shape; backward accumulates into it
};

// Called with a parameter as soon as backward has finished its gradient, in backprop
// order: this is what lets a DistributedOptimizer overlap communication with backward.
using GradReadyHook = std::function<void(Parameter&)>;

// A layer or a container of layers. forward() keeps what backward() needs (in training
// mode); backward() takes dL/d(output), accumulates parameter gradients, announces them,
// and returns dL/d(input).
class Module {
 public:
  virtual ~Module() = default;
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  virtual Tensor forward(const Tensor& input) = 0;
  virtual Tensor backward(const Tensor& grad_output) = 0;

  // Parameters and buffers of this module and its children, in registration order, with
  // full names (prefixes joined by '.').
  std::vector<Parameter*> parameters();
  std::vector<std::pair<std::string, Tensor*>> buffers();
  int64_t parameter_count();
  Parameter* find_parameter(const std::string& name);
  Tensor* find_buffer(const std::string& name);
  // This module and all its descendants, depth first in registration order (torch's
  // modules()): how whole-net transformations such as synchronize_batchnorm find layers.
  std::vector<Module*> modules();

  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  void zero_grad();
  // Moves every parameter, gradient and buffer to `device` (torch's module.to(device)).
  // Optimizers keep their Parameter pointers; their state follows at their next step.
  void to(Device device);
  void set_grad_ready_hook(GradReadyHook hook);
  // Whether backward() must return dL/d(input). A net's first layer does not need it
  // (as PyTorch skips it for inputs that do not require grad); kolo-parity turns it on.
  virtual void set_needs_input_grad(bool on) { needs_input_grad_ = on; }

 protected:
  Parameter& add_parameter(const std::string& name, std::vector<int64_t> shape);
  Tensor& add_buffer(const std::string& name, Tensor initial);
  template <typename M>
  M& add_child(const std::string& name, std::unique_ptr<M> child) {
    M& ref = *child;
    children_.push_back({name, std::move(child)});
    ref.rename(qualified(name));
    return ref;
  }
  void grad_ready(Parameter& p);  // call when p.grad is final for this backward
  bool needs_input_grad() const { return needs_input_grad_; }
  virtual void on_train(bool on) {}

 private:
  void rename(const std::string& prefix);
  // A child added under an empty name shares its parent's prefix.
  std::string qualified(const std::string& name) const {
    if (name.empty()) return prefix_;
    return prefix_.empty() ? name : prefix_ + "." + name;
  }
  void collect(std::vector<Parameter*>& params, std::vector<std::pair<std::string, Tensor*>>& buffers);

  struct Child {
    std::string name;
    std::unique_ptr<Module> module;
  };
  std::string prefix_;
  std::vector<std::unique_ptr<Parameter>> params_;
  std::vector<std::pair<std::string, std::unique_ptr<Tensor>>> buffers_;  // local name
  std::vector<Child> children_;
  GradReadyHook hook_;
  bool training_ = true;
  bool needs_input_grad_ = true;
};

// Runs its children in order; backward in reverse.
class Sequential : public Module {
 public:
  template <typename M>
  M& add(const std::string& name, std::unique_ptr<M> layer) {
    M& ref = add_child(name, std::move(layer));
    if (layers_.empty()) ref.set_needs_input_grad(needs_input_grad());
    layers_.push_back(&ref);
    return ref;
  }
  Tensor forward(const Tensor& input) override;
  Tensor backward(const Tensor& grad_output) override;
  void set_needs_input_grad(bool on) override;

 private:
  std::vector<Module*> layers_;
};

// ---- Layers ------------------------------------------------------------------------------

struct Conv2dOptions {
  int64_t in_channels = 0, out_channels = 0;
  int64_t kernel = 3, stride = 1, padding = 0;
  bool bias = true;
};
class Conv2d : public Module {
 public:
  explicit Conv2d(const Conv2dOptions& options);
  Tensor forward(const Tensor& input) override;
  Tensor backward(const Tensor& grad_output) override;
  Parameter& weight() { return *weight_; }
  Parameter* bias() { return bias_; }
  const Conv2dOptions& options() const { return options_; }

 private:
  Conv2dOptions options_;
  Parameter* weight_;
  Parameter* bias_ = nullptr;
  Tensor input_;  // kept by a training-mode forward for backward
};

struct BatchNormOptions {
  int64_t channels = 0;
  double eps = 1e-5;       // Keras' ResNetV2 uses 1.001e-5
  double momentum = 0.1;   // PyTorch convention: running = (1 - m) running + m batch
};
class BatchNorm2d : public Module {
 public:
  explicit BatchNorm2d(const BatchNormOptions& options);
  Tensor forward(const Tensor& input) override;
  Tensor backward(const Tensor& grad_output) override;
  Parameter& weight() { return *weight_; }
  Parameter& bias() { return *bias_; }
  Tensor& running_mean() { return *running_mean_; }
  Tensor& running_var() { return *running_var_; }

  // Hook for SyncBatchNorm: sums a vector of per-channel statistics across ranks, in
  // place. Called with [Σx | count] and [Σ(x - mean)²] in forward and [Σdy | Σdy·xhat]
  // in backward. Null: this rank's batch alone.
  using StatsReducer = std::function<void(std::vector<double>& stats)>;
  void set_stats_reducer(StatsReducer reducer) { reducer_ = std::move(reducer); }

 private:
  BatchNormOptions options_;
  Parameter* weight_;
  Parameter* bias_;
  Tensor* running_mean_;
  Tensor* running_var_;
  Tensor* num_batches_tracked_;
  StatsReducer reducer_;
  Tensor input_, mean_, inv_std_;
  double count_ = 0;
};

class ReLU : public Module {
 public:
  Tensor forward(const Tensor& input) override;  // in place on its input, as torchvision's ReLU(inplace=True)
  Tensor backward(const Tensor& grad_output) override;

 private:
  Tensor output_;
};

struct MaxPoolOptions {
  int64_t kernel = 2, stride = 2, padding = 0;
};
class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(const MaxPoolOptions& options);
  Tensor forward(const Tensor& input) override;
  Tensor backward(const Tensor& grad_output) override;

 private:
  MaxPoolOptions options_;
  // int32 index within the input plane of each output's maximum, stored in a float
  // tensor's 4-byte words so that it lives on the input's device.
  Tensor argmax_;
  std::vector<int64_t> input_shape_;
};

class GlobalAvgPool : public Module {  // (N, C, H, W) -> (N, C)
 public:
  Tensor forward(const Tensor& input) override;
  Tensor backward(const Tensor& grad_output) override;

 private:
  std::vector<int64_t> input_shape_;
};

class Flatten : public Module {  // (N, ...) -> (N, rest)
 public:
  Tensor forward(const Tensor& input) override;
  Tensor backward(const Tensor& grad_output) override;

 private:
  std::vector<int64_t> input_shape_;
};

class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& input) override;  // (N, in) -> (N, out)
  Tensor backward(const Tensor& grad_output) override;
  Parameter& weight() { return *weight_; }
  Parameter* bias() { return bias_; }

 private:
  Parameter* weight_;
  Parameter* bias_ = nullptr;
  Tensor input_;
};

class Dropout : public Module {
 public:
  explicit Dropout(double p, uint64_t seed = 0);  // p from 0 to 1
  Tensor forward(const Tensor& input) override;
  Tensor backward(const Tensor& grad_output) override;

 private:
  void apply_mask(const Tensor& in, Tensor& out) const;
  double p_;
  std::mt19937_64 rng_;
  Tensor mask_;  // 0 or 1 / (1 - p) per element, on the input's device
};

class ZeroPad2d : public Module {
 public:
  explicit ZeroPad2d(int64_t padding) : padding_(padding) {}
  Tensor forward(const Tensor& input) override;
  Tensor backward(const Tensor& grad_output) override;

 private:
  int64_t padding_;
};

// ---- Losses and metrics -------------------------------------------------------------------

struct LossResult {
  double loss = 0;  // mean over the batch
  Tensor grad;      // dLoss/dLogits, same shape as the logits
};
// logits (N, classes); labels in [0, classes). Throws kolo::Error on a bad label.
LossResult softmax_cross_entropy(const Tensor& logits, const std::vector<int32_t>& labels);
// Fraction of rows whose largest logit is at the label (ties: first maximum).
double accuracy(const Tensor& logits, const std::vector<int32_t>& labels);

// ---- Nets ---------------------------------------------------------------------------------

// A whole network: a Module with a name and a description of its input.
class Net : public Sequential {
 public:
  Net() { set_needs_input_grad(false); }
  std::string name;
};

// Conv5x5-32 → ReLU → MaxPool2 → Conv5x5-64 → ReLU → MaxPool2 → Flatten → Dense-10
// on 1×28×28 inputs: 62,346 parameters.
std::unique_ptr<Net> mnist_convnet(int64_t classes = 10);
// torchvision layouts and parameter names.
std::unique_ptr<Net> resnet(int depth, int64_t classes = 1000);  // 18, 34, 50, 101, 152
// Keras ResNetV2 layouts (pre-activation; the stride in the last block of each stack).
std::unique_ptr<Net> resnet_v2(int depth, int64_t classes = 1000);  // 50, 101, 152
// Any of the above by name: "mnist_convnet", "resnet18", ..., "resnet50v2", ...
std::unique_ptr<Net> make_net(const std::string& name, int64_t classes);

// Initialises every parameter and buffer as the reference framework does (torchvision:
// Kaiming-normal convolutions, PyTorch's default Linear; Keras: Glorot-uniform), seeded.
void initialize(Net& net, uint64_t seed);

// ---- Compute threads --------------------------------------------------------------------------

// Threads the CPU kernels use (default: 1). Set before training starts. The threads are one
// pool for the process: program threads that run layers at once (a validation thread beside
// training) take turns in it, each parallel loop whole.
void set_num_threads(int threads);
int num_threads();

// How the CPU kernels convolve. Auto (the default): oneDNN's direct kernels, the ones
// PyTorch runs, in builds with oneDNN (libdnnl-dev; KOLO_ONEDNN); kolo's own im2col + Eigen
// GEMM where that wins by construction (kernel taps that only ever read padding, as in
// ResNet's last stage at 32×32 inputs) and in builds without oneDNN. Im2col and OneDnn
// force one way (OneDnn throws kolo::Error in a build without it).
enum class CpuConvolution : int { Auto, Im2col, OneDnn };
void set_cpu_convolution(CpuConvolution mode);
CpuConvolution cpu_convolution();
bool has_onednn();

}  // namespace kolo::models

#include "kolo/models/amp.h"
#include "kolo/models/checkpoint.h"
#include "kolo/models/data.h"
#include "kolo/models/gpu.h"
#include "kolo/models/optim.h"
#include "kolo/models/distributed.h"
