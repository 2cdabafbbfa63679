// PyTorch's C++ MNIST example (pytorch/examples, cpp/mnist/mnist.cpp) on Fashion-MNIST,
// made data-parallel with kolo. Every line kolo needed is marked "// kolo:", at its end or
// on the line before a block (which ends at the next blank line); without them this is the
// single-process program. See docs/embedding.md, "A LibTorch training loop".
//
//   kolorun -np 2 ./libtorch_mnist --epochs 1
//   mpirun -np 2 ./libtorch_mnist --epochs 2 --train-limit 6000 --test-limit 1000
#include <torch/torch.h>

#include <kolo/torch.h>  // kolo:

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <exception>

#include "fashion_mnist.h"
#include "options.h"

struct Net : torch::nn::Module {
  Net()
      : conv1(torch::nn::Conv2dOptions(1, 10, /*kernel_size=*/5)),
        conv2(torch::nn::Conv2dOptions(10, 20, /*kernel_size=*/5)),
        fc1(320, 50),
        fc2(50, 10) {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("conv2_drop", conv2_drop);
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }

  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(torch::max_pool2d(conv1->forward(x), 2));
    x = torch::relu(torch::max_pool2d(conv2_drop->forward(conv2->forward(x)), 2));
    x = x.view({-1, 320});
    x = torch::relu(fc1->forward(x));
    x = torch::dropout(x, /*p=*/0.5, /*training=*/is_training());
    x = fc2->forward(x);
    return torch::log_softmax(x, /*dim=*/1);
  }

  torch::nn::Conv2d conv1;
  torch::nn::Conv2d conv2;
  torch::nn::Dropout2d conv2_drop;
  torch::nn::Linear fc1;
  torch::nn::Linear fc2;
};

// kolo: Optimizer is a template parameter: kolo's DistributedOptimizer wraps a
// torch::optim::Optimizer rather than deriving from one.
template <typename DataLoader, typename Optimizer>
void train(size_t epoch, Net& model, torch::Device device, DataLoader& data_loader, Optimizer& optimizer,
           size_t dataset_size, const Options& opt) {
  model.train();
  size_t batch_idx = 0;
  for (auto& batch : data_loader) {
    auto data = batch.data.to(device), targets = batch.target.to(device);
    optimizer.zero_grad();
    auto output = model.forward(data);
    auto loss = torch::nll_loss(output, targets);
    AT_ASSERT(!std::isnan(loss.template item<float>()));
    loss.backward();
    optimizer.step();

    if (batch_idx++ % opt.log_interval == 0 && kolo::rank() == 0) {  // kolo: && rank 0
      std::printf("Train Epoch: %zu [%5zu/%5zu] Loss: %.4f\n", epoch,
                  batch_idx * batch.data.size(0) * kolo::size(),  // kolo: * size: every rank's images
                  dataset_size, loss.template item<float>());
    }
  }
}

template <typename DataLoader>
void test(Net& model, torch::Device device, DataLoader& data_loader) {
  torch::NoGradGuard no_grad;
  model.eval();
  double test_loss = 0;
  int64_t correct = 0;
  int64_t dataset_size = 0;
  for (const auto& batch : data_loader) {
    auto data = batch.data.to(device), targets = batch.target.to(device);
    auto output = model.forward(data);
    test_loss += torch::nll_loss(output, targets, /*weight=*/{}, torch::Reduction::Sum).template item<float>();
    auto pred = output.argmax(1);
    correct += pred.eq(targets).sum().template item<int64_t>();
    dataset_size += batch.data.size(0);
  }

  // kolo: each rank saw its part of the test set: add up the parts.
  auto totals = kolo::torch::allreduce(
      torch::tensor({test_loss, double(correct), double(dataset_size)}, torch::kFloat64), "test.totals",
      {.op = kolo::ReduceOp::Sum});
  test_loss = totals[0].item<double>();
  correct = totals[1].item<int64_t>();
  dataset_size = totals[2].item<int64_t>();

  test_loss /= dataset_size;
  if (kolo::rank() == 0) {  // kolo:
    std::printf("Test set: Average loss: %.4f | Accuracy: %.3f\n", test_loss,
                static_cast<double>(correct) / dataset_size);
  }
}

void run(const Options& opt) {
  torch::manual_seed(1);

  torch::DeviceType device_type = torch::cuda::is_available() ? torch::kCUDA : torch::kCPU;
  // kolo: one GPU per rank of a node.
  torch::Device device(device_type, device_type == torch::kCUDA ? kolo::local_rank() % torch::cuda::device_count() : -1);
  if (kolo::rank() == 0)  // kolo:
    std::printf("Training on %s, %d rank(s).\n", device.str().c_str(), kolo::size());  // kolo: , ranks

  Net model;
  model.to(device);

  auto train_dataset = FashionMnist(opt.data_root, FashionMnist::Mode::kTrain, opt.train_limit)
                           .map(torch::data::transforms::Normalize<>(0.2860, 0.3530))
                           .map(torch::data::transforms::Stack<>());
  const size_t train_dataset_size = train_dataset.size().value();
  // kolo: each rank trains on its own part of the images (equal parts, so that every rank
  // takes as many steps; the last part is padded with the first images).
  auto train_loader = torch::data::make_data_loader(
      std::move(train_dataset),
      torch::data::samplers::DistributedSequentialSampler(train_dataset_size, kolo::size(), kolo::rank()),
      opt.train_batch_size);

  auto test_dataset = FashionMnist(opt.data_root, FashionMnist::Mode::kTest, opt.test_limit)
                          .map(torch::data::transforms::Normalize<>(0.2860, 0.3530))
                          .map(torch::data::transforms::Stack<>());
  const size_t test_dataset_size = test_dataset.size().value();
  // kolo: each rank tests on its own part (the last size - 1 images at most are left out).
  auto test_loader = torch::data::make_data_loader(
      std::move(test_dataset),
      torch::data::samplers::DistributedSequentialSampler(test_dataset_size, kolo::size(), kolo::rank(),
                                                          /*allow_duplicates=*/false),
      opt.test_batch_size);

  torch::optim::SGD optimizer(
      model.parameters(),
      torch::optim::SGDOptions(opt.learning_rate * kolo::size()).momentum(0.5));  // kolo: * size, as the batch grows

  // kolo: every rank starts from rank 0's weights and optimizer state; the gradients are
  // averaged over the ranks during backward, and step() waits for them.
  kolo::torch::broadcast_parameters(model, 0);
  kolo::torch::broadcast_optimizer_state(optimizer, 0);
  kolo::torch::DistributedOptimizer distributed(optimizer, model.named_parameters());

  for (size_t epoch = 1; epoch <= static_cast<size_t>(opt.epochs); ++epoch) {
    train(epoch, model, device, *train_loader, distributed, train_dataset_size, opt);  // kolo: distributed
    test(model, device, *test_loader);
  }
}

int main(int argc, char** argv) {
  Options opt;
  try {
    opt = parse_options(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "libtorch_mnist: %s\n%s", e.what(), usage());
    return 2;
  }
  if (opt.help) {
    std::fputs(usage(), stdout);
    return 0;
  }
  kolo::init();  // kolo:
  try {
    run(opt);
  } catch (const std::exception& e) {  // a data file missing, or kolo::Error
    std::fprintf(stderr, "libtorch_mnist: rank %d: %s\n", kolo::rank(), e.what());  // kolo: rank
    return 1;
  }
  kolo::shutdown();  // kolo:
}
