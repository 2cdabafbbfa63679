// Per-layer times of the CPU kernels' two convolutions, im2col + Eigen and oneDNN (where
// kolo was built with it), for the forward pass, the weight gradient and the input
// gradient: the measurements behind the Auto rule in models/cpu/conv_dispatch.cc.
//
//   build/bench/models/conv_benchmark [--threads 1] [--reps 20] [--shape N,C,H,W,K,R,S,P ...]
//
// A shape is batch, input channels, height, width, output channels, kernel, stride,
// padding; the default shapes are the MNIST net's and ResNet-18's at 32×32 inputs. Times
// are medians in ms, printed as a Markdown table.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "kolo/models.h"

using namespace kolo::models;

namespace {

struct Shape {
  int64_t batch, channels, height, width, out_channels, kernel, stride, padding;
};

Shape parse_shape(const std::string& text) {
  Shape s{};
  char comma = 0;
  std::istringstream in(text);
  in >> s.batch >> comma >> s.channels >> comma >> s.height >> comma >> s.width >> comma >> s.out_channels >> comma >>
      s.kernel >> comma >> s.stride >> comma >> s.padding;
  if (!in || !in.eof() || s.batch < 1 || s.channels < 1 || s.height < 1 || s.width < 1 || s.out_channels < 1 ||
      s.kernel < 1 || s.stride < 1 || s.padding < 0 || s.height + 2 * s.padding < s.kernel ||
      s.width + 2 * s.padding < s.kernel)
    throw CLI::ValidationError("--shape", "expected N,C,H,W,K,R,S,P of a valid convolution, got '" + text + "'");
  return s;
}

struct Times {
  double forward, weight_gradient, input_gradient;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double milliseconds(const std::function<void()>& work) {
  const auto start = std::chrono::steady_clock::now();
  work();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

Times measure(const Shape& s, int reps) {
  Conv2d conv({.in_channels = s.channels, .out_channels = s.out_channels, .kernel = s.kernel, .stride = s.stride,
               .padding = s.padding, .bias = false});
  for (int64_t i = 0; i < conv.weight().value.numel(); ++i) conv.weight().value[i] = float(i % 89) * 0.01f - 0.4f;
  Tensor x({s.batch, s.channels, s.height, s.width});
  for (int64_t i = 0; i < x.numel(); ++i) x[i] = float(i % 97) * 0.01f - 0.5f;
  const Tensor dy = conv.forward(x).clone();
  std::vector<double> forward, weights, both;
  for (int r = 0; r < reps + 1; ++r) {  // the first round builds what is cached, untimed
    const double f = milliseconds([&] { conv.forward(x); });
    conv.set_needs_input_grad(false);
    const double w = milliseconds([&] { conv.backward(dy); });
    conv.forward(x);
    conv.set_needs_input_grad(true);
    const double b = milliseconds([&] { conv.backward(dy); });
    if (r == 0) continue;
    forward.push_back(f);
    weights.push_back(w);
    both.push_back(b);
  }
  return {median(forward), median(weights), std::max(0.0, median(both) - median(weights))};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kolo: per-layer times of the CPU convolutions, im2col and oneDNN"};
  int threads = 1, reps = 20;
  std::vector<std::string> shapes = {"100,1,28,28,32,5,1,0",  "100,32,12,12,64,5,1,0", "32,3,32,32,64,7,2,3",
                                     "32,64,8,8,64,3,1,1",    "32,128,4,4,128,3,1,1",  "32,256,2,2,256,3,1,1",
                                     "32,256,2,2,512,3,2,1",  "32,512,1,1,512,3,1,1"};
  app.add_option("--threads", threads)->check(CLI::PositiveNumber);
  app.add_option("--reps", reps, "timed repetitions (median)")->check(CLI::PositiveNumber);
  app.add_option("--shape", shapes, "N,C,H,W,K,R,S,P (repeatable)");
  CLI11_PARSE(app, argc, argv);
  std::vector<Shape> parsed;
  try {
    for (const std::string& text : shapes) parsed.push_back(parse_shape(text));
  } catch (const CLI::Error& e) {
    return app.exit(e);
  }

  set_num_threads(threads);
  std::vector<std::pair<CpuConvolution, const char*>> ways = {{CpuConvolution::Im2col, "im2col"}};
  if (has_onednn()) ways.emplace_back(CpuConvolution::OneDnn, "oneDNN");
  std::printf("| shape N,C,H,W,K,R,S,P | way | forward ms | weight gradient ms | input gradient ms |\n");
  std::printf("|---|---|---:|---:|---:|\n");
  for (std::size_t i = 0; i < parsed.size(); ++i)
    for (const auto& [way, name] : ways) {
      set_cpu_convolution(way);
      const Times t = measure(parsed[i], reps);
      std::printf("| %s | %s | %.3f | %.3f | %.3f |\n", shapes[i].c_str(), name, t.forward, t.weight_gradient,
                  t.input_gradient);
      std::fflush(stdout);
    }
  set_cpu_convolution(CpuConvolution::Auto);
  return 0;
}
