// The shared net, data and training loop of the DistributedOptimizer tests (training.h).
#include "training.h"

namespace kolo_torch_test {

namespace nn = ::torch::nn;

NetImpl::NetImpl() {
  conv = register_module("conv", nn::Conv2d(nn::Conv2dOptions(1, 3, 3)));
  fc = register_module("fc", nn::Linear(3 * 4 * 4, 4));
  extra = register_module("extra", nn::Linear(3 * 4 * 4, 4));
}

at::Tensor NetImpl::forward(const at::Tensor& x, bool use_extra) {
  at::Tensor h = ::torch::relu(conv(x)).flatten(1);
  at::Tensor y = fc(h);
  return use_extra ? y + extra(h) : y;
}

Net make_net(uint64_t seed) {
  ::torch::manual_seed(seed);
  Net net;
  net->to(::torch::kDouble);
  return net;
}

MakeOptimizer sgd_with_momentum() {
  return [](std::vector<at::Tensor> params) -> std::unique_ptr<::torch::optim::Optimizer> {
    return std::make_unique<::torch::optim::SGD>(std::move(params), ::torch::optim::SGDOptions(0.1).momentum(0.9));
  };
}

MakeOptimizer adam() {
  return [](std::vector<at::Tensor> params) -> std::unique_ptr<::torch::optim::Optimizer> {
    return std::make_unique<::torch::optim::Adam>(std::move(params), ::torch::optim::AdamOptions(0.01));
  };
}

namespace {

constexpr uint64_t kModelSeed = 7;

// Batch `index` of the run: size * per_rank images and labels, the same on every rank.
struct Batch {
  at::Tensor x, y;
};
Batch whole_batch(int64_t index, int64_t rows) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(1000 + index);
  at::Tensor x = at::randn({rows, 1, 6, 6}, gen, at::TensorOptions().dtype(at::kDouble));
  at::Tensor y = at::randint(0, 4, {rows}, gen, at::TensorOptions().dtype(at::kLong));
  return {x, y};
}

at::Tensor loss_of(Net& net, const Batch& b, int64_t from, int64_t rows, bool use_extra) {
  return ::torch::nn::functional::cross_entropy(net->forward(b.x.narrow(0, from, rows), use_extra),
                                                b.y.narrow(0, from, rows));
}

bool extra_for(const Run& run, int step, int rank) { return run.uses_extra && run.uses_extra(step, rank); }

// Runs the loop: `backward(net, batch, step)` makes one pass's gradients.
template <typename Optimizer, typename Backward>
void loop(const Run& run, Net& net, Optimizer& opt, Backward backward) {
  const int64_t rows = run.per_rank * kolo::size();
  for (int step = 0; step < run.steps; ++step) {
    opt.zero_grad();
    for (int pass = 0; pass < run.passes; ++pass) backward(whole_batch(step * run.passes + pass, rows), step);
    opt.step();
  }
}

}  // namespace

Net train_distributed(const Run& run) {
  Net net = make_net(kModelSeed);
  auto inner = run.make_optimizer(net->parameters());
  kolo::torch::DistributedOptimizer opt(*inner, net->named_parameters(), run.options);
  const int r = kolo::rank();
  loop(run, net, opt, [&](const Batch& b, int step) {
    loss_of(net, b, r * run.per_rank, run.per_rank, extra_for(run, step, r)).backward();
  });
  return net;
}

Net train_reference(const Run& run) {
  Net net = make_net(kModelSeed);
  auto opt = run.make_optimizer(net->parameters());
  const int n = kolo::size();
  loop(run, net, *opt, [&](const Batch& b, int step) {
    at::Tensor loss;
    if (!run.uses_extra) {
      loss = loss_of(net, b, 0, run.per_rank * n, false);  // the concatenated batch
    } else {
      // The mean of the slices' losses, each with or without `extra` as its rank had it.
      loss = at::zeros({}, at::kDouble);
      for (int r = 0; r < n; ++r) loss = loss + loss_of(net, b, r * run.per_rank, run.per_rank, extra_for(run, step, r));
      loss = loss / n;
    }
    (loss * run.reference_loss_scale).backward();
  });
  return net;
}

at::Tensor flat_parameters(const ::torch::nn::Module& module) {
  std::vector<at::Tensor> parts;
  for (const auto& p : module.parameters()) parts.push_back(p.detach().flatten());
  for (const auto& b : module.buffers()) parts.push_back(b.detach().flatten().to(at::kDouble));
  return at::cat(parts);
}

at::Tensor gather_rows(const at::Tensor& t) {
  return kolo::torch::allgather_async(t.unsqueeze(0)).wait();
}

}  // namespace kolo_torch_test
