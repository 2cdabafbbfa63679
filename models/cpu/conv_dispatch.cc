// Which convolution each call runs. By default oneDNN's direct kernels, which are what
// PyTorch runs and several times faster than im2col + GEMM on 3×3 convolutions; kolo's
// own im2col path where it wins by construction (it leaves out taps that only read
// padding: ResNet's last stage at small inputs), where oneDNN has nothing better than
// reference code, and in builds without oneDNN. The choice is a fixed rule, not a
// timing, so that a run gives the same numbers every time.
#include <atomic>
#include <map>
#include <mutex>
#include <tuple>

#include "conv_paths.h"
#include "cpu_kernels.h"
#include "kolo/check.h"
#include "kolo/models.h"

namespace kolo::models {
namespace {
std::atomic<CpuConvolution> requested{CpuConvolution::Auto};
}  // namespace

bool has_onednn() {
#if KOLO_WITH_ONEDNN
  return true;
#else
  return false;
#endif
}

void set_cpu_convolution(CpuConvolution mode) {
  KOLO_CHECK(mode != CpuConvolution::OneDnn || has_onednn(), StatusCode::Unsupported,
             "kolo: set_cpu_convolution(OneDnn): this kolo was built without oneDNN (KOLO_ONEDNN=OFF or libdnnl-dev missing)");
  requested.store(mode);
}

CpuConvolution cpu_convolution() { return requested.load(); }

namespace cpu {
namespace {

// Which passes of a convolution run on oneDNN.
struct Choice {
  bool forward = false, input_gradient = false, weight_gradient = false;
};

bool onednn_is_fast(const ConvShape& s) {
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>;
  static std::mutex mutex;
  static std::map<Key, bool> fast;  // per shape, the batch aside
  const Key key{s.in_channels, s.height, s.width, s.out_channels, s.kernel, s.stride, s.padding};
  std::lock_guard<std::mutex> lock(mutex);
  auto it = fast.find(key);
  if (it == fast.end()) it = fast.emplace(key, onednn_has_fast_kernel(s)).first;
  return it->second;
}

// The Auto rule, from per-layer timings of both ways on MNIST's and ResNet-18's shapes
// (docs/perf.md). oneDNN wins the forward pass by 1.1-2.6× wherever all taps are live
// and an image has more than one output pixel (with one, a convolution is a plain GEMM,
// im2col's home ground). Its input gradient is 2-9× slower than im2col's with 1 or 3
// input channels (a net's first layer, which never needs one in training), and its
// weight gradient loses on maps under 4×4, where it reduces over few pixels per image.
Choice choose(const ConvShape& s) {
  switch (requested.load()) {
    case CpuConvolution::Im2col: return {};
    case CpuConvolution::OneDnn: return {true, true, true};
    case CpuConvolution::Auto: break;
  }
  const int64_t pixels = s.out_height() * s.out_width();
  if (!has_onednn() || im2col_skips_dead_taps(s) || pixels == 1 || !onednn_is_fast(s)) return {};
  return {.forward = true,
          .input_gradient = s.in_channels >= 8,
          .weight_gradient = pixels >= 16};
}

}  // namespace

void CpuKernels::conv2d_forward(const ConvShape& s, const float* x, const float* w, const float* b, float* y) {
  if (choose(s).forward)
    onednn_conv_forward(s, x, w, b, y);
  else
    im2col_conv_forward(s, x, w, b, y);
}

void CpuKernels::conv2d_backward(const ConvShape& s, const float* x, const float* w, const float* dy, float* dx,
                                 float* dw, float* db) {
  const Choice c = choose(s);
  const bool input_on_onednn = dx != nullptr && c.input_gradient;
  if (c.weight_gradient && (dx == nullptr || input_on_onednn)) {
    onednn_conv_backward(s, x, w, dy, dx, dw, db);
  } else if (input_on_onednn) {
    im2col_conv_backward(s, x, w, dy, nullptr, dw, db);
    onednn_conv_backward(s, x, w, dy, dx, nullptr, nullptr);
  } else {  // an input gradient on im2col takes the weight gradient along: they share the columns
    im2col_conv_backward(s, x, w, dy, dx, dw, db);
  }
}

#if !KOLO_WITH_ONEDNN
// Never called: without oneDNN, choose() picks im2col for every pass.
bool onednn_has_fast_kernel(const ConvShape&) { return false; }
void onednn_conv_forward(const ConvShape&, const float*, const float*, const float*, float*) {}
void onednn_conv_backward(const ConvShape&, const float*, const float*, const float*, float*, float*, float*) {}
#endif

}  // namespace cpu
}  // namespace kolo::models
