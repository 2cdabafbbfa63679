// Training and inference throughput of kolo's model layer on the CPU, one configuration
// per run, printed as one JSON line (compare_models.py runs it next to PyTorch):
//
//   build/bench/models/model_benchmark --model resnet18 --batch 32 --size 32 --classes 10
//                                  --threads 2 --mode train --steps 10
//
// A training step is forward + softmax cross-entropy + backward + an SGD step (momentum
// 0.9). peak_mb is the resident memory the run needed at its peak above the process's
// level before the net was built: parameters, gradients, optimizer state, activations and
// workspaces (the kernel's high-water mark, reset through /proc/self/clear_refs).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "kolo/models.h"

using namespace kolo::models;

namespace {

// VmRSS or VmHWM from /proc/self/status, in MiB.
double status_mb(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string key;
  double kb = 0;
  while (in >> key) {
    if (key == field + ":") {
      in >> kb;
      return kb / 1024.0;
    }
    in.ignore(1 << 12, '\n');
  }
  return 0;
}

void reset_peak() { std::ofstream("/proc/self/clear_refs") << "5"; }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kolo model-layer throughput benchmark"};
  std::string model = "resnet18", mode = "train";
  int64_t batch = 32, size = 32, classes = 10;
  int threads = 1, steps = 10, warmup = 2;
  app.add_option("--model", model, "mnist_convnet, resnet18, resnet50, resnet50v2, ...");
  app.add_option("--batch", batch)->check(CLI::PositiveNumber);
  app.add_option("--size", size, "input height and width")->check(CLI::PositiveNumber);
  app.add_option("--classes", classes)->check(CLI::PositiveNumber);
  app.add_option("--threads", threads)->check(CLI::PositiveNumber);
  app.add_option("--mode", mode)->check(CLI::IsMember({"train", "infer"}));
  app.add_option("--steps", steps)->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup)->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);

  set_num_threads(threads);
  const double rss_before = status_mb("VmRSS");
  reset_peak();
  std::unique_ptr<Net> net = make_net(model, classes);
  initialize(*net, 1);
  const int64_t channels = model == "mnist_convnet" ? 1 : 3;
  Tensor images({batch, channels, size, size});
  for (int64_t i = 0; i < images.numel(); ++i) images[i] = static_cast<float>((i * 7919) % 1000) / 1000.0f - 0.5f;
  std::vector<int32_t> labels(static_cast<std::size_t>(batch));
  for (int64_t i = 0; i < batch; ++i) labels[static_cast<std::size_t>(i)] = static_cast<int32_t>(i % classes);
  SGD sgd(net->parameters(), {.lr = 0.01, .momentum = 0.9});
  const bool train = mode == "train";
  net->train(train);

  auto step = [&] {
    if (!train) {
      net->forward(images);
      return;
    }
    net->zero_grad();
    const Tensor logits = net->forward(images);
    net->backward(softmax_cross_entropy(logits, labels).grad);
    sgd.step();
  };
  for (int i = 0; i < warmup; ++i) step();
  std::vector<double> ms;
  for (int i = 0; i < steps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    step();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  const double peak = status_mb("VmHWM") - rss_before;
  std::sort(ms.begin(), ms.end());
  std::printf("{\"framework\": \"kolo\", \"model\": \"%s\", \"mode\": \"%s\", \"batch\": %lld, \"size\": %lld, "
              "\"threads\": %d, \"step_ms_min\": %.3f, \"step_ms_median\": %.3f, \"images_per_s\": %.1f, "
              "\"peak_mb\": %.1f}\n",
              model.c_str(), mode.c_str(), static_cast<long long>(batch), static_cast<long long>(size), threads,
              ms.front(), ms[ms.size() / 2], batch / ms[ms.size() / 2] * 1e3, peak);
  return 0;
}
