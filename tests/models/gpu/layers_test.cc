// Tensors, layers and whole nets on the GPU against the same on the CPU.
#include <catch2/catch.hpp>

#include "gpu_test_util.h"

using namespace kolo::models;
using namespace kolo::models::gpu_test;

TEST_CASE("tensors move between the host and the GPU unchanged", "[gpu][tensor]") {
  const Tensor t = random_tensor({3, 5, 7}, 1);
  Tensor g = t.to(kGpu);
  CHECK(g.device() == kGpu);
  CHECK(g.is_cuda());
  CHECK(g.shape() == t.shape());
  CHECK(identical(g, t));
  CHECK(g.to(kGpu).data() == g.data());  // already there: the same tensor
  CHECK(g.view().device == kGpu);

  Tensor c = g.clone();
  c.fill(2.5f);
  CHECK(identical(g, t));
  CHECK(identical(c, Tensor::full(t.shape(), 2.5f)));
  CHECK(identical(Tensor({4, 4}, kGpu), Tensor({4, 4})));
  CHECK(identical(Tensor::full({3}, -1.0f, kGpu), Tensor::full({3}, -1.0f)));

  Tensor into({3, 5, 7}, kGpu);
  into.copy_from(t);  // host -> GPU
  CHECK(identical(into, t));
  Tensor host({3, 5, 7});
  host.copy_from(into);  // GPU -> host
  CHECK(identical(host, t));
  CHECK(identical(g.reshape({15, 7}), t));
  CHECK(g.reshape({15, 7}).device() == kGpu);
}

TEST_CASE("a batch-norm layer on the GPU trains and evaluates as on the CPU", "[gpu][batchnorm]") {
  BatchNorm2d cpu({.channels = 6, .eps = 1e-5, .momentum = 0.1});
  BatchNorm2d gpu({.channels = 6, .eps = 1e-5, .momentum = 0.1});
  cpu.weight().value.copy_from(random_tensor({6}, 1));
  cpu.bias().value.copy_from(random_tensor({6}, 2));
  gpu.weight().value.copy_from(cpu.weight().value);
  gpu.bias().value.copy_from(cpu.bias().value);
  gpu.to(kGpu);
  cpu.set_needs_input_grad(true);
  gpu.set_needs_input_grad(true);
  for (int step = 0; step < 2; ++step) {
    Tensor x = random_tensor({4, 6, 5, 3}, 10 + step, 3.0);
    for (int64_t i = 0; i < x.numel(); ++i) x[i] += 50.0f;
    const Tensor dy = random_tensor(x.shape(), 20 + step);
    const Tensor y = cpu.forward(x), dx = cpu.backward(dy);
    const Tensor gy = gpu.forward(x.to(kGpu)), gdx = gpu.backward(dy.to(kGpu));
    CHECK(rel_l2(gy, y) < 1e-6);
    CHECK(rel_l2(gdx, dx) < 1e-5);
  }
  CHECK(rel_l2(gpu.weight().grad, cpu.weight().grad) < 1e-6);
  CHECK(rel_l2(gpu.bias().grad, cpu.bias().grad) < 1e-6);
  CHECK(rel_l2(gpu.running_mean(), cpu.running_mean()) < 1e-6);
  CHECK(rel_l2(gpu.running_var(), cpu.running_var()) < 1e-6);
  CHECK(identical(*gpu.find_buffer("num_batches_tracked"), *cpu.find_buffer("num_batches_tracked")));

  cpu.eval();
  gpu.eval();
  const Tensor x = random_tensor({2, 6, 4, 4}, 30);
  CHECK(rel_l2(gpu.forward(x.to(kGpu)), cpu.forward(x)) < 1e-6);
}

namespace {

// A batch-norm layer with the given weights on `device`; its reducer (if `reduce`) stands in
// for another rank: it records each vector, then adds that rank's part, v[i]·factor + shift·i
// (factor 1, shift 0: a second rank with the same batch).
struct ReducedBatchNorm {
  BatchNorm2d layer;
  std::vector<std::vector<double>> handed;
  ReducedBatchNorm(kolo::Device device, bool reduce, double factor, double shift)
      : layer({.channels = 6, .eps = 1e-5, .momentum = 0.1}) {
    layer.weight().value.copy_from(random_tensor({6}, 1));
    layer.bias().value.copy_from(random_tensor({6}, 2));
    layer.to(device);
    layer.set_needs_input_grad(true);
    if (reduce)
      layer.set_stats_reducer([this, factor, shift](std::vector<double>& v) {
        handed.push_back(v);
        for (std::size_t i = 0; i < v.size(); ++i) v[i] += v[i] * factor + shift * double(i);
      });
  }
};

double rel_diff(const std::vector<double>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) return INFINITY;
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    diff += (got[i] - want[i]) * (got[i] - want[i]);
    norm += want[i] * want[i];
  }
  return std::sqrt(diff / norm);
}

}  // namespace

TEST_CASE("synchronized batch norm on the GPU hands its reducer the CPU's sums and trains as the CPU",
          "[gpu][batchnorm][syncbn]") {
  ReducedBatchNorm cpu(kolo::Device::cpu(), true, 0.5, 3.0), gpu(kGpu, true, 0.5, 3.0);
  for (int step = 0; step < 2; ++step) {
    Tensor x = random_tensor({4, 6, 5, 3}, 10 + step, 3.0);
    for (int64_t i = 0; i < x.numel(); ++i) x[i] += 50.0f;
    const Tensor dy = random_tensor(x.shape(), 20 + step);
    const Tensor y = cpu.layer.forward(x), dx = cpu.layer.backward(dy);
    const Tensor gy = gpu.layer.forward(x.to(kGpu)), gdx = gpu.layer.backward(dy.to(kGpu));
    CHECK(gy.device() == kGpu);
    CHECK(gdx.device() == kGpu);
    CHECK(rel_l2(gy, y) < 1e-6);
    CHECK(rel_l2(gdx, dx) < 1e-5);
  }
  // Per step: [Σx | count], [Σ(x - mean)²], [Σdy | Σdy·xhat], as the CPU hands them.
  REQUIRE(gpu.handed.size() == 6);
  REQUIRE(cpu.handed.size() == 6);
  for (std::size_t i = 0; i < 6; ++i) {
    INFO("vector " << i);
    CHECK(gpu.handed[i].size() == std::vector<std::size_t>{7, 6, 12}[i % 3]);
    CHECK(rel_diff(gpu.handed[i], cpu.handed[i]) < 1e-12);
  }
  CHECK(rel_l2(gpu.layer.weight().grad, cpu.layer.weight().grad) < 1e-6);
  CHECK(rel_l2(gpu.layer.bias().grad, cpu.layer.bias().grad) < 1e-6);
  CHECK(rel_l2(gpu.layer.running_mean(), cpu.layer.running_mean()) < 1e-6);
  CHECK(rel_l2(gpu.layer.running_var(), cpu.layer.running_var()) < 1e-6);
  CHECK(identical(*gpu.layer.find_buffer("num_batches_tracked"), *cpu.layer.find_buffer("num_batches_tracked")));

  // Evaluation uses the running statistics alone: the reducer is not called.
  gpu.layer.eval();
  cpu.layer.eval();
  const Tensor x = random_tensor({2, 6, 4, 4}, 30);
  CHECK(rel_l2(gpu.layer.forward(x.to(kGpu)), cpu.layer.forward(x)) < 1e-6);
  CHECK(gpu.handed.size() == 6);
}

TEST_CASE("synchronized batch norm on the GPU over two equal batches normalises as one batch", "[gpu][batchnorm][syncbn]") {
  // The same batch on the "other rank": the global mean and variance are this batch's, so
  // y and dx are the unsynchronized layer's; the running variance's unbiased correction
  // sees twice the count.
  ReducedBatchNorm synced(kGpu, true, 1.0, 0.0), alone(kGpu, false, 0, 0);
  Tensor x = random_tensor({3, 6, 4, 4}, 40, 2.0);
  const Tensor dy = random_tensor(x.shape(), 41);
  const Tensor y = synced.layer.forward(x.to(kGpu)), y1 = alone.layer.forward(x.to(kGpu));
  const Tensor dx = synced.layer.backward(dy.to(kGpu)), dx1 = alone.layer.backward(dy.to(kGpu));
  CHECK(rel_l2(y, y1.cpu()) < 1e-6);
  CHECK(rel_l2(dx, dx1.cpu()) < 1e-5);
  // The parameter gradients are this rank's own (the runtime averages them across ranks).
  CHECK(rel_l2(synced.layer.weight().grad, alone.layer.weight().grad.cpu()) < 1e-6);
  CHECK(rel_l2(synced.layer.bias().grad, alone.layer.bias().grad.cpu()) < 1e-6);
  CHECK(rel_l2(synced.layer.running_mean(), alone.layer.running_mean().cpu()) < 1e-6);
  const Tensor var = alone.layer.running_var().cpu();
  Tensor want = var.clone();
  const double m = 3 * 16;  // values per channel on one rank
  for (int64_t c = 0; c < 6; ++c) {  // running_var = 0.9 + 0.1·var_unbiased(count)
    const double batch_var = (double(var[c]) - 0.9) / 0.1 * (m - 1) / m;
    want[c] = static_cast<float>(0.9 + 0.1 * batch_var * (2 * m) / (2 * m - 1));
  }
  CHECK(rel_l2(synced.layer.running_var(), want) < 1e-5);
}

TEST_CASE("dropout on the GPU drops the CPU's elements and scales as the CPU does", "[gpu][dropout]") {
  Dropout cpu(0.3, 42), gpu(0.3, 42);  // same seed: same masks
  cpu.train();
  gpu.train();
  for (int step = 0; step < 2; ++step) {
    const Tensor x = random_tensor({3, 5, 7, 11}, 50 + step), dy = random_tensor(x.shape(), 60 + step);
    const Tensor y = cpu.forward(x), dx = cpu.backward(dy);
    const Tensor gy = gpu.forward(x.to(kGpu));
    CHECK(gy.device() == kGpu);
    const Tensor gdx = gpu.backward(dy.to(kGpu));
    CHECK(gdx.device() == kGpu);
    CHECK(identical(gy, y));  // one float product per element on both devices
    CHECK(identical(gdx, dx));
  }
  int64_t dropped = 0;
  const Tensor y = gpu.forward(Tensor::full({10000}, 1.0f).to(kGpu)).cpu();
  for (int64_t i = 0; i < y.numel(); ++i) {
    CHECK((y[i] == 0.0f || y[i] == static_cast<float>(1.0 / 0.7)));
    dropped += y[i] == 0.0f;
  }
  CHECK(std::abs(double(dropped) / 10000 - 0.3) < 0.03);
  CHECK_THROWS_WITH(gpu.backward(Tensor({10000})), Catch::Contains("is on cpu but its mask is on cuda:0"));

  gpu.eval();  // the identity, on the same device
  const Tensor x = random_tensor({4, 4}, 70).to(kGpu);
  CHECK(gpu.forward(x).data() == x.data());
}

namespace {

// One training step of `name` on the CPU and on the GPU from the same initial weights and
// data; returns the worst relative error over logits, loss, gradients and updated weights.
double train_step_error(const std::string& name, int64_t batch, int64_t size, int64_t channels) {
  std::unique_ptr<Net> cpu = make_net(name, 10), gpu = make_net(name, 10);
  initialize(*cpu, 5);
  initialize(*gpu, 5);
  gpu->to(kGpu);
  const Tensor x = random_tensor({batch, channels, size, size}, 6);
  std::vector<int32_t> labels;
  for (int64_t i = 0; i < batch; ++i) labels.push_back(static_cast<int32_t>((i * 7) % 10));
  SGD cpu_sgd(cpu->parameters(), {.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-4});
  SGD gpu_sgd(gpu->parameters(), {.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-4});

  const Tensor logits = cpu->forward(x);
  const LossResult loss = softmax_cross_entropy(logits, labels);
  cpu->backward(loss.grad);
  const Tensor glogits = gpu->forward(x.to(kGpu));
  const LossResult gloss = softmax_cross_entropy(glogits, labels);
  gpu->backward(gloss.grad);

  double worst = std::max(rel_l2(glogits, logits), std::abs(gloss.loss - loss.loss) / std::abs(loss.loss));
  const std::vector<Parameter*> cp = cpu->parameters(), gp = gpu->parameters();
  for (std::size_t i = 0; i < cp.size(); ++i) {
    INFO(cp[i]->name);
    const double e = rel_l2(gp[i]->grad, cp[i]->grad);
    CHECK(e < 1e-3);
    worst = std::max(worst, e);
  }
  cpu_sgd.step();
  gpu_sgd.step();
  for (std::size_t i = 0; i < cp.size(); ++i) worst = std::max(worst, rel_l2(gp[i]->value, cp[i]->value));
  return worst;
}

}  // namespace

TEST_CASE("whole nets take the same training step on the GPU as on the CPU", "[gpu][nets]") {
  StrictFloat32 strict;
  CHECK(train_step_error("mnist_convnet", 4, 28, 1) < 1e-4);
  // 64×64 and 4 images: the last stage's batch norms see 16 values per channel, not 2
  // (with 2 their gradients are ill-conditioned, and the CPU's and GPU's different
  // summation orders would grow through them).
  CHECK(train_step_error("resnet18", 4, 64, 3) < 1e-3);
  CHECK(train_step_error("resnet50v2", 4, 64, 3) < 1e-3);
}

TEST_CASE("GPU layers refuse mixed devices and paths they do not have, with clear errors", "[gpu][errors]") {
  Conv2d conv({.in_channels = 3, .out_channels = 4, .kernel = 3});
  CHECK_THROWS_WITH(conv.forward(Tensor({1, 3, 8, 8}, kGpu)), Catch::Contains("is on cpu but the input is on cuda:0"));
  BatchNorm2d bn({.channels = 3});
  bn.to(kGpu);
  bn.set_stats_reducer([](std::vector<double>& v) { v.back() = 1; });  // a count of 1 in all
  CHECK_THROWS_WITH(bn.forward(Tensor({2, 3, 2, 2}, kGpu)), Catch::Contains("more than one value per channel"));
  Parameter p{"p", Tensor({3}, kGpu), Tensor({3}, kGpu)};
  Parameter q{"q", Tensor({3}), Tensor({3})};
  SGD mixed({&p, &q}, {.lr = 0.1});
  CHECK_THROWS_WITH(mixed.step(), Catch::Contains("must be on one device"));
  CHECK_THROWS_WITH(Tensor({2}, kolo::Device::cuda(99)), Catch::Contains("no CUDA device 99"));
  CHECK_THROWS_WITH(Tensor({int64_t{1} << 48}, kGpu), Catch::Contains("out of device memory"));
}
