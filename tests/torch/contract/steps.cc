// Two training steps through kolo::torch's DistributedOptimizer, for the contract check
// (contract_check.py): the same net, data and steps as steps.py does through kolo.torch's.
//
//   mpirun -np 2 kolo_torch_contract_steps --op average|sum|adasum --passes N --out FILE
//
// Rank 0 writes the parameters after the two steps, one value per line (float64, %.17g).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "kolo/torch.h"

namespace {

const auto kF64 = ::torch::TensorOptions().dtype(::torch::kFloat64);

// The net and the data: closed formulas of torch ops, written alike in steps.py.
kolo::torch::NamedTensors parameters() {
  return {{"w1", (::torch::arange(12, kF64).reshape({3, 4}) * 0.37).sin() * 0.5},
          {"b1", (::torch::arange(3, kF64) * 0.11).cos() * 0.1},
          {"w2", (::torch::arange(6, kF64).reshape({2, 3}) * 0.23).cos() * 0.5},
          {"b2", ::torch::zeros({2}, kF64)}};
}

std::pair<at::Tensor, at::Tensor> batch(int rank, int step, int pass) {
  const int k = rank + 10 * step + 100 * pass;
  return {((::torch::arange(32, kF64).reshape({8, 4}) + 100 * k) * 0.013).sin(),
          ((::torch::arange(16, kF64).reshape({8, 2}) + 7 * k) * 0.029).cos()};
}

[[noreturn]] void usage() {
  std::fprintf(stderr, "usage: kolo_torch_contract_steps --op average|sum|adasum --passes N --out FILE\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  std::string op_name, out;
  int passes = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--op")) op_name = argv[i + 1];
    else if (!std::strcmp(argv[i], "--passes")) passes = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--out")) out = argv[i + 1];
    else usage();
  }
  const kolo::ReduceOp op = op_name == "average" ? kolo::ReduceOp::Average
                            : op_name == "sum"   ? kolo::ReduceOp::Sum
                            : op_name == "adasum" ? kolo::ReduceOp::Adasum
                                                  : (usage(), kolo::ReduceOp::Sum);
  if (passes < 1 || out.empty()) usage();

  kolo::init();
  ::torch::set_num_threads(1);
  kolo::torch::NamedTensors named = parameters();
  std::vector<at::Tensor> params;
  for (auto& [name, value] : named) params.push_back(value.requires_grad_());
  ::torch::optim::SGD sgd(params, ::torch::optim::SGDOptions(0.1).momentum(0.9));
  kolo::torch::DistributedOptimizer opt(sgd, named, {.backward_passes_per_step = passes, .op = op});
  for (int step = 0; step < 2; ++step) {
    opt.zero_grad();
    for (int pass = 0; pass < passes; ++pass) {
      auto [x, target] = batch(kolo::rank(), step, pass);
      at::Tensor y = ::torch::tanh(x.matmul(params[0].t()) + params[1]).matmul(params[2].t()) + params[3];
      (y - target).pow(2).mean().backward();
    }
    opt.step();
  }
  if (kolo::rank() == 0) {
    FILE* file = std::fopen(out.c_str(), "w");
    if (!file) return 1;
    for (auto& [name, value] : named) {
      at::Tensor flat = value.detach().flatten().contiguous();
      for (int64_t i = 0; i < flat.numel(); ++i) std::fprintf(file, "%s %.17g\n", name.c_str(), flat[i].item<double>());
    }
    std::fclose(file);
  }
  kolo::shutdown();
  return 0;
}
