// Training throughput of kolo's model layer on a GPU, one configuration per run, printed as
// one JSON line; bench_pytorch_gpu.py prints the same line for PyTorch and run.sh runs both
// over the configurations of docs/perf.md ("Model layer on a GPU"):
//
//   build/bench/gpu_models/kolo-gpu-benchmark --model resnet50 --batch 64 --size 224 --precision fp16
//
// A step is zero_grad, forward, softmax cross-entropy, backward and SGD (momentum 0.9), with
// a LossScaler for fp16, on a batch that stays on the GPU (as PyTorch benchmarks usually do;
// --upload copies it from pinned host memory every step instead). Each step ends with a
// synchronisation, so the time is the GPU's. peak_allocated_mb is the caching allocator's
// high-water mark of memory in use (torch.cuda.max_memory_allocated), peak_reserved_mb what
// it held from the device (max_memory_reserved). Exits 77 without a GPU.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "kolo/models.h"

using namespace kolo::models;

int main(int argc, char** argv) {
  CLI::App app{"kolo model-layer GPU training benchmark"};
  std::string model = "resnet50", precision = "fp32";
  int64_t batch = 64, size = 224, classes = 1000;
  int steps = 20, warmup = 5, device_index = 0;
  bool upload = false;
  app.add_option("--model", model, "mnist_convnet, resnet18, resnet50, resnet50v2, resnet152v2, ...");
  app.add_option("--batch", batch)->check(CLI::PositiveNumber);
  app.add_option("--size", size, "input height and width")->check(CLI::PositiveNumber);
  app.add_option("--classes", classes)->check(CLI::PositiveNumber);
  app.add_option("--precision", precision, "fp32, fp16 (with loss scaling) or bf16")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  app.add_option("--steps", steps)->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "steps before timing (algorithm search, allocator warm-up)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--device", device_index, "CUDA device ordinal")->check(CLI::NonNegativeNumber);
  app.add_flag("--upload", upload, "upload the batch from host memory every step");
  CLI11_PARSE(app, argc, argv);

  if (device_index >= cuda_device_count()) {
    std::printf("{\"framework\": \"kolo\", \"skipped\": \"no CUDA device %d (or a build without CUDA)\"}\n",
                device_index);
    return 77;
  }
  const kolo::Device gpu = kolo::Device::cuda(device_index);
  set_compute_precision(gpu, precision == "fp16"   ? kolo::DType::Float16
                             : precision == "bf16" ? kolo::DType::BFloat16
                                                   : kolo::DType::Float32);
  std::unique_ptr<Net> net = make_net(model, classes);
  initialize(*net, 1);
  net->to(gpu);
  const int64_t channels = model == "mnist_convnet" ? 1 : 3;
  Tensor host_images({batch, channels, size, size});
  for (int64_t i = 0; i < host_images.numel(); ++i)
    host_images[i] = static_cast<float>((i * 7919) % 1000) / 1000.0f - 0.5f;
  const Tensor images = host_images.to(gpu);
  std::vector<int32_t> labels(static_cast<std::size_t>(batch));
  for (int64_t i = 0; i < batch; ++i) labels[static_cast<std::size_t>(i)] = static_cast<int32_t>(i % classes);
  SGD sgd(net->parameters(), {.lr = 0.01, .momentum = 0.9});
  LossScaler scaler;
  net->train();

  auto step = [&] {
    sgd.zero_grad();
    LossResult loss = softmax_cross_entropy(net->forward(upload ? host_images.to(gpu) : images), labels);
    if (precision == "fp16") {
      scaler.scale_gradient(loss.grad);
      net->backward(loss.grad);
      scaler.step(sgd);
    } else {
      net->backward(loss.grad);
      sgd.step();
    }
    synchronize(gpu);
  };
  for (int i = 0; i < warmup; ++i) step();
  reset_peak_gpu_memory(gpu);
  std::vector<double> ms;
  for (int i = 0; i < steps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    step();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  const GpuMemoryStats memory = gpu_memory_stats(gpu);
  std::sort(ms.begin(), ms.end());
  const double median = ms[ms.size() / 2];
  std::printf("{\"framework\": \"kolo\", \"model\": \"%s\", \"batch\": %lld, \"size\": %lld, \"precision\": \"%s\", "
              "\"upload\": %s, \"step_ms_min\": %.3f, \"step_ms_median\": %.3f, \"images_per_s\": %.1f, "
              "\"peak_allocated_mb\": %.1f, \"peak_reserved_mb\": %.1f, \"device_allocations\": %lld}\n",
              model.c_str(), static_cast<long long>(batch), static_cast<long long>(size), precision.c_str(),
              upload ? "true" : "false", ms.front(), median, double(batch) / median * 1e3,
              double(memory.peak_in_use_bytes) / (1 << 20), double(memory.peak_reserved_bytes) / (1 << 20),
              static_cast<long long>(memory.device_allocations));
  return 0;
}
