// Optimizers, loss scaling, memory and mixed-precision training on the GPU.
#include <catch2/catch.hpp>

#include <limits>

#include "gpu_test_util.h"

using namespace kolo::models;
using namespace kolo::models::gpu_test;

namespace {

// Parameters of several sizes, one above the multi-tensor chunk (65536) so that a tensor
// spans several blocks.
struct Params {
  std::vector<std::unique_ptr<Parameter>> owned;
  std::vector<Parameter*> list;
  Params(kolo::Device device, uint64_t seed) {
    for (int64_t n : {70001, 5, 300}) {
      auto p = std::make_unique<Parameter>();
      p->name = std::to_string(n);
      p->name.insert(0, 1, 'p');
      p->value = random_tensor({n}, seed + n).to(device);
      p->grad = Tensor({n}, device);
      list.push_back(p.get());
      owned.push_back(std::move(p));
    }
  }
  void set_grads(uint64_t seed) {
    for (Parameter* p : list) p->grad.copy_from(random_tensor(p->grad.shape(), seed + p->grad.numel()));
  }
};

template <typename Make>
void check_optimizer_matches(Make make, double bound) {
  Params cpu(kolo::Device::cpu(), 1), gpu(kGpu, 1);
  auto cpu_opt = make(cpu.list);
  auto gpu_opt = make(gpu.list);
  for (int step = 0; step < 3; ++step) {
    cpu.set_grads(100 + step);
    gpu.set_grads(100 + step);
    cpu_opt->step();
    gpu_opt->step();
  }
  for (std::size_t i = 0; i < cpu.list.size(); ++i) CHECK(rel_l2(gpu.list[i]->value, cpu.list[i]->value) < bound);
  // The state comes back to the host for checkpoints, and loads onto the GPU again.
  const OptimizerState cs = cpu_opt->state(), gs = gpu_opt->state();
  REQUIRE(cs.tensors.size() == gs.tensors.size());
  for (const auto& [name, values] : cs.tensors) {
    const Tensor want = Tensor::from({static_cast<int64_t>(values.size())}, values);
    const Tensor got = Tensor::from({static_cast<int64_t>(gs.tensors.at(name).size())}, gs.tensors.at(name));
    CHECK(rel_l2(got, want) < bound);
  }
  gpu_opt->load_state(cs);
  cpu.set_grads(200);
  gpu.set_grads(200);
  cpu_opt->step();
  gpu_opt->step();
  for (std::size_t i = 0; i < cpu.list.size(); ++i) CHECK(rel_l2(gpu.list[i]->value, cpu.list[i]->value) < bound);
}

}  // namespace

TEST_CASE("fused multi-tensor SGD on the GPU follows torch.optim.SGD as the CPU does", "[gpu][optim]") {
  const std::vector<SgdOptions> configs = {{.lr = 0.1},
                                           {.lr = 0.1, .momentum = 0.9},
                                           {.lr = 0.05, .momentum = 0.9, .weight_decay = 1e-4, .nesterov = true},
                                           {.lr = 0.1, .momentum = 0.5, .dampening = 0.1, .weight_decay = 1e-3}};
  for (const SgdOptions& o : configs)
    check_optimizer_matches([&](std::vector<Parameter*> p) { return std::make_unique<SGD>(p, o); }, 1e-6);
}

TEST_CASE("fused multi-tensor Adam on the GPU follows torch.optim.Adam as the CPU does", "[gpu][optim]") {
  check_optimizer_matches(
      [](std::vector<Parameter*> p) { return std::make_unique<Adam>(p, AdamOptions{.lr = 1e-3, .weight_decay = 0.01}); },
      1e-6);
}

TEST_CASE("fused multi-tensor Adadelta on the GPU follows torch.optim.Adadelta as the CPU does", "[gpu][optim]") {
  const std::vector<AdadeltaOptions> configs = {{}, {.lr = 0.5, .rho = 0.8, .eps = 1e-4, .weight_decay = 0.1}};
  for (const AdadeltaOptions& o : configs)
    check_optimizer_matches([&](std::vector<Parameter*> p) { return std::make_unique<Adadelta>(p, o); }, 1e-6);
}

TEST_CASE("the loss scaler unscales GPU gradients and finds inf/NaN there", "[gpu][loss-scaler]") {
  Params gpu(kGpu, 3);
  gpu.set_grads(4);
  SGD sgd(gpu.list, {.lr = 0.0});
  const Tensor before = gpu.list[0]->grad.cpu();
  LossScaler scaler({.init_scale = 1024.0});
  CHECK_FALSE(scaler.unscale(sgd));
  Tensor want = before.clone();
  for (int64_t i = 0; i < want.numel(); ++i) want[i] *= 1.0f / 1024.0f;
  CHECK(identical(gpu.list[0]->grad, want));

  Tensor bad = gpu.list[2]->grad.cpu();
  bad[17] = std::numeric_limits<float>::infinity();
  gpu.list[2]->grad.copy_from(bad);
  CHECK(scaler.unscale(sgd));
  CHECK_FALSE(scaler.step(sgd));  // skipped, scale halved
  CHECK(scaler.scale() == 512.0f);
  Tensor g = Tensor::full({5}, 2.0f).to(kGpu);
  scaler.scale_gradient(g);
  CHECK(identical(g, Tensor::full({5}, 1024.0f)));
}

TEST_CASE("after the first steps, training allocates no new GPU memory", "[gpu][memory]") {
  std::unique_ptr<Net> net = make_net("resnet18", 10);
  initialize(*net, 1);
  net->to(kGpu);
  SGD sgd(net->parameters(), {.lr = 0.01, .momentum = 0.9});
  const Tensor x = random_tensor({8, 3, 32, 32}, 2);
  std::vector<int32_t> labels(8, 3);
  auto step = [&] {
    sgd.zero_grad();
    net->backward(softmax_cross_entropy(net->forward(x.to(kGpu)), labels).grad);
    sgd.step();
  };
  step();
  step();
  synchronize(kGpu);
  const GpuMemoryStats warm = gpu_memory_stats(kGpu);
  for (int i = 0; i < 5; ++i) step();
  synchronize(kGpu);
  const GpuMemoryStats after = gpu_memory_stats(kGpu);
  CHECK(after.device_allocations == warm.device_allocations);
  CHECK(after.peak_in_use_bytes >= after.in_use_bytes);
  CHECK(after.reserved_bytes >= after.in_use_bytes);
}

namespace {

// A 10-class task the MNIST net learns in a few hundred steps: each class is a fixed random
// 28×28 pattern plus noise.
struct PatternTask {
  std::vector<Tensor> patterns;
  std::mt19937_64 rng{11};
  PatternTask() {
    for (int k = 0; k < 10; ++k) patterns.push_back(random_tensor({28 * 28}, 500 + k));
  }
  std::pair<Tensor, std::vector<int32_t>> batch(int64_t n) {
    Tensor x({n, 1, 28, 28});
    std::vector<int32_t> y;
    std::normal_distribution<double> noise(0.0, 1.5);
    std::uniform_int_distribution<int> label(0, 9);
    for (int64_t i = 0; i < n; ++i) {
      const int k = label(rng);
      y.push_back(k);
      for (int64_t j = 0; j < 28 * 28; ++j) x[i * 784 + j] = patterns[k][j] + static_cast<float>(noise(rng));
    }
    return {x, y};
  }
};

double train_and_score(kolo::DType precision) {
  set_compute_precision(kGpu, precision);
  std::unique_ptr<Net> net = make_net("mnist_convnet", 10);
  initialize(*net, 3);
  net->to(kGpu);
  SGD sgd(net->parameters(), {.lr = 0.01, .momentum = 0.9});
  LossScaler scaler;
  PatternTask task;
  for (int step = 0; step < 300; ++step) {
    auto [x, y] = task.batch(32);
    sgd.zero_grad();
    LossResult loss = softmax_cross_entropy(net->forward(x.to(kGpu)), y);
    if (precision == kolo::DType::Float32) {
      net->backward(loss.grad);
      sgd.step();
    } else {
      scaler.scale_gradient(loss.grad);
      net->backward(loss.grad);
      scaler.step(sgd);
    }
  }
  net->eval();
  auto [x, y] = task.batch(1000);
  const double score = accuracy(net->forward(x.to(kGpu)), y);
  set_compute_precision(kGpu, kolo::DType::Float32);
  return score;
}

}  // namespace

TEST_CASE("mixed-precision training of the MNIST net reaches the float32 accuracy", "[gpu][amp]") {
  const double fp32 = train_and_score(kolo::DType::Float32);
  const double fp16 = train_and_score(kolo::DType::Float16);
  const double bf16 = train_and_score(kolo::DType::BFloat16);
  INFO("accuracy fp32 " << fp32 << ", fp16 " << fp16 << ", bf16 " << bf16);
  CHECK(fp32 > 0.9);
  CHECK(fp16 > fp32 - 0.02);
  CHECK(bf16 > fp32 - 0.02);
}
