// Convolutions through cuDNN's legacy API (still in cuDNN 9, and the simplest way to run a
// plain 2-D convolution): algorithms measured with cudnnFind*AlgorithmEx once per shape,
// precision and pass (ConvAlgorithmCache), workspaces from the caching allocator.
//
// In float16/bfloat16 precision (set_compute_precision) the operands are cast into
// temporary buffers, cuDNN computes in the reduced type with float32 accumulation, and the
// results are cast back (dw is added to the float32 gradient): storage stays float32.
// Since they are copied anyway, the casts may also transpose to channels-last (NHWC): for
// each pass and shape, both layouts are measured once, casts included, and the faster one
// is kept (ConvAlgorithmCache::choose_layout). Float32 stays NCHW: there is no copy to
// fold a transposition into.
#include <algorithm>
#include <functional>
#include <memory>
#include <vector>

#include "models/cuda/cuda_kernels.h"
#include "models/cuda/cudnn_cublas_check.h"
#include "ops/cuda/device_guard.h"

namespace kolo::models::cuda {
namespace {

cudnnDataType_t cudnn_type(DType d) {
  switch (d) {
    case DType::Float16: return CUDNN_DATA_HALF;
    case DType::BFloat16: return CUDNN_DATA_BFLOAT16;
    default: return CUDNN_DATA_FLOAT;
  }
}

cudnnTensorFormat_t format(Layout layout) { return layout == Layout::NHWC ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW; }

class TensorDesc {
 public:
  TensorDesc(int64_t n, int64_t c, int64_t h, int64_t w, DType dtype, Layout layout) {
    KOLO_CUDNN_CHECK(cudnnCreateTensorDescriptor(&d_));
    KOLO_CUDNN_CHECK(
        cudnnSetTensor4dDescriptor(d_, format(layout), cudnn_type(dtype), int(n), int(c), int(h), int(w)));
  }
  ~TensorDesc() { cudnnDestroyTensorDescriptor(d_); }
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
  cudnnTensorDescriptor_t get() const { return d_; }

 private:
  cudnnTensorDescriptor_t d_ = nullptr;
};

class FilterDesc {
 public:
  // NHWC is KRSC: out_channels, kernel rows, kernel columns, in_channels.
  FilterDesc(const ConvShape& s, DType dtype, Layout layout) {
    KOLO_CUDNN_CHECK(cudnnCreateFilterDescriptor(&d_));
    KOLO_CUDNN_CHECK(cudnnSetFilter4dDescriptor(d_, cudnn_type(dtype), format(layout), int(s.out_channels),
                                                int(s.in_channels), int(s.kernel), int(s.kernel)));
  }
  ~FilterDesc() { cudnnDestroyFilterDescriptor(d_); }
  FilterDesc(const FilterDesc&) = delete;
  FilterDesc& operator=(const FilterDesc&) = delete;
  cudnnFilterDescriptor_t get() const { return d_; }

 private:
  cudnnFilterDescriptor_t d_ = nullptr;
};

class ConvDesc {
 public:
  ConvDesc(const ConvShape& s, cudnnMathType_t math) {
    KOLO_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&d_));
    KOLO_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(d_, int(s.padding), int(s.padding), int(s.stride), int(s.stride),
                                                     1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    set_math(math);
  }
  ~ConvDesc() { cudnnDestroyConvolutionDescriptor(d_); }
  ConvDesc(const ConvDesc&) = delete;
  ConvDesc& operator=(const ConvDesc&) = delete;
  void set_math(cudnnMathType_t math) { KOLO_CUDNN_CHECK(cudnnSetConvolutionMathType(d_, math)); }
  cudnnConvolutionDescriptor_t get() const { return d_; }

 private:
  cudnnConvolutionDescriptor_t d_ = nullptr;
};

// The descriptors of x (dx), y (dy) and w (dw) in one layout and the compute precision.
struct LayoutDescs {
  LayoutDescs(const ConvShape& s, DType dtype, Layout layout)
      : x(s.batch, s.in_channels, s.height, s.width, dtype, layout),
        y(s.batch, s.out_channels, s.out_height(), s.out_width(), dtype, layout),
        w(s, dtype, layout) {}
  TensorDesc x, y;
  FilterDesc w;
};

// An operand as (n, c, hw): x and y are (batch, channels, pixels), w is (out_channels,
// in_channels, kernel²).
struct Dims {
  int64_t n, c, hw;
  int64_t count() const { return n * c * hw; }
};

// CUDA events around work on a stream: its time on the GPU, in ms.
float elapsed_ms(DeviceContext& context, const std::function<void()>& work) {
  struct Event {
    Event() { KOLO_CUDA_CHECK(cudaEventCreate(&e)); }
    ~Event() { cudaEventDestroy(e); }
    cudaEvent_t e = nullptr;
  } start, stop;
  KOLO_CUDA_CHECK(cudaEventRecord(start.e, context.stream()));
  work();
  KOLO_CUDA_CHECK(cudaEventRecord(stop.e, context.stream()));
  wait_for(stop.e, 600, "timing a convolution's casts");
  float ms = 0;
  KOLO_CUDA_CHECK(cudaEventElapsedTime(&ms, start.e, stop.e));
  return ms;
}

// Everything one convolution call needs: descriptors in the compute precision (per layout,
// made when first used), and the operands in it (cast copies when it is not float32, one
// per operand and layout).
struct ConvCall {
  ConvCall(DeviceContext& context, const ConvShape& s)
      : context(context),
        shape(s),
        dtype(context.precision.load()),
        tf32(dtype == DType::Float32 && context.allow_tf32.load()),
        math(dtype != DType::Float32 ? CUDNN_TENSOR_OP_MATH : tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH),
        conv(s, math) {}

  Dims x_dims() const { return {shape.batch, shape.in_channels, shape.height * shape.width}; }
  Dims y_dims() const { return {shape.batch, shape.out_channels, shape.out_height() * shape.out_width()}; }
  Dims w_dims() const { return {shape.out_channels, shape.in_channels, shape.kernel * shape.kernel}; }
  bool reduced() const { return dtype != DType::Float32; }
  std::size_t bytes(Dims d) const { return static_cast<std::size_t>(d.count()) * dtype_size(dtype); }

  const LayoutDescs& descs(Layout layout) {
    std::unique_ptr<LayoutDescs>& d = descs_[static_cast<int>(layout)];
    if (!d) d = std::make_unique<LayoutDescs>(shape, dtype, layout);
    return *d;
  }

  // `data` in the compute precision and `layout`: itself (float32 is NCHW), or a cast copy
  // kept alive by this call.
  const void* operand(const float* data, Dims dims, Layout layout) {
    if (!reduced()) return data;
    for (const Operand& o : operands_)
      if (o.source == data && o.layout == layout) return o.copy.get();
    std::shared_ptr<void> copy = context.allocate(bytes(dims));
    cast(data, dims, layout, copy.get());
    operands_.push_back({data, layout, copy});
    return copy.get();
  }
  // Where a result is written: `out` itself, or a reduced buffer that finish() casts into
  // `out` (in either layout: the buffer's size does not depend on it).
  void* result(float* out, Dims dims) {
    if (!reduced()) return out;
    std::shared_ptr<void> buffer = context.allocate(bytes(dims));
    results_.push_back(buffer);
    return buffer.get();
  }
  void finish(const void* result, float* out, Dims dims, Layout layout, bool accumulate) {
    if (!reduced()) return;
    if (layout == Layout::NHWC)
      launch::from_reduced_nhwc(context.stream(), dims.n, dims.c, dims.hw, result, dtype, out, accumulate);
    else
      launch::from_reduced(context.stream(), dims.count(), result, dtype, out, accumulate);
  }
  void cast(const float* data, Dims dims, Layout layout, void* copy) {
    if (layout == Layout::NHWC)
      launch::to_reduced_nhwc(context.stream(), dims.n, dims.c, dims.hw, data, copy, dtype);
    else
      launch::to_reduced(context.stream(), dims.count(), data, copy, dtype);
  }

  // What `pass` casts in `layout` (two operands in, the result out), timed on scratch memory
  // (after one untimed round: a kernel's first launch may load its module).
  float cast_ms(ConvPass pass, Layout layout) {
    const Dims in1 = pass == ConvPass::BackwardData ? y_dims() : x_dims();
    const Dims in2 = pass == ConvPass::BackwardFilter ? y_dims() : w_dims();
    const Dims out = pass == ConvPass::Forward ? y_dims() : pass == ConvPass::BackwardData ? x_dims() : w_dims();
    const bool accumulate = pass == ConvPass::BackwardFilter;
    const int64_t most = std::max({in1.count(), in2.count(), out.count()});
    auto floats = context.allocate(static_cast<std::size_t>(most) * sizeof(float));
    auto reduced_scratch = context.allocate(bytes({most, 1, 1}));
    float* f = static_cast<float*>(floats.get());
    void* r = reduced_scratch.get();
    const auto casts = [&] {
      cast(f, in1, layout, r);
      cast(f, in2, layout, r);
      finish(r, f, out, layout, accumulate);
    };
    casts();
    constexpr int kRounds = 3;
    return elapsed_ms(context, [&] {
             for (int i = 0; i < kRounds; ++i) casts();
           }) / kRounds;
  }

  // The layout and algorithm of `pass`: NCHW in float32; in float16/bfloat16 the faster
  // layout, casts included (or the one set_channels_last forces). `find` measures cuDNN's
  // candidates in a layout.
  using LayoutFinder = std::function<std::vector<AlgoCandidate>(const LayoutDescs& d, Layout layout, std::size_t limit)>;
  LayoutChoice plan(ConvAlgorithmCache& cache, ConvPass pass, const LayoutFinder& find) {
    const ConvAlgorithmCache::Finder finder = [&](const ConvKey& key, std::size_t limit) {
      conv.set_math(math);  // search with this call's math type, not a previous pass's choice
      return find(descs(key.layout), key.layout, limit);
    };
    const ConvKey key{pass,         shape.batch,  shape.in_channels, shape.height, shape.width, shape.out_channels,
                      shape.kernel, shape.stride, shape.padding,     dtype,        Layout::NCHW, tf32};
    LayoutChoice chosen;
    if (reduced())
      chosen = cache.choose_layout(
          key, finder, [&](Layout layout) { return cast_ms(pass, layout); }, context.channels_last.load());
    else
      chosen.choice = cache.choose(key, finder);
    conv.set_math(static_cast<cudnnMathType_t>(chosen.choice.math_type));
    return chosen;
  }

  // Workspace for measuring: as much of `limit` as the device has room for.
  std::shared_ptr<void> search_workspace(std::size_t limit, std::size_t& bytes) {
    for (std::size_t want : {limit, limit / 8, std::size_t{0}}) {
      try {
        bytes = want;
        return context.allocate(want);
      } catch (const Error&) {
        if (want == 0) throw;
      }
    }
    return nullptr;
  }

  DeviceContext& context;
  const ConvShape shape;
  const DType dtype;
  const bool tf32;
  const cudnnMathType_t math;  // what the searches use
  ConvDesc conv;

 private:
  struct Operand {
    const float* source;
    Layout layout;
    std::shared_ptr<void> copy;
  };
  std::unique_ptr<LayoutDescs> descs_[2];
  std::vector<Operand> operands_;
  std::vector<std::shared_ptr<void>> results_;
};

template <typename Perf>
std::vector<AlgoCandidate> candidates(const Perf* perf, int returned) {
  std::vector<AlgoCandidate> out;
  for (int i = 0; i < returned; ++i)
    out.push_back({static_cast<int>(perf[i].algo), perf[i].status == CUDNN_STATUS_SUCCESS, perf[i].time,
                   perf[i].memory, static_cast<int>(perf[i].mathType)});
  return out;
}

}  // namespace

void CudaKernels::conv2d_forward(const ConvShape& s, const float* x, const float* w, const float* b, float* y) {
  ops::cuda::DeviceGuard on(context_.index());
  ConvCall call(context_, s);
  void* yr = call.result(y, call.y_dims());
  const LayoutChoice plan =
      call.plan(algorithms_, ConvPass::Forward, [&](const LayoutDescs& d, Layout layout, std::size_t limit) {
        const void* xr = call.operand(x, call.x_dims(), layout);
        const void* wr = call.operand(w, call.w_dims(), layout);
        std::size_t bytes = 0;
        auto workspace = call.search_workspace(limit, bytes);
        cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        int returned = 0;
        KOLO_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(context_.cudnn(), d.x.get(), xr, d.w.get(), wr,
                                                                call.conv.get(), d.y.get(), yr,
                                                                CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf,
                                                                workspace.get(), bytes));
        return candidates(perf, returned);
      });
  const LayoutDescs& d = call.descs(plan.layout);
  const void* xr = call.operand(x, call.x_dims(), plan.layout);
  const void* wr = call.operand(w, call.w_dims(), plan.layout);
  auto workspace = context_.allocate(plan.choice.workspace_bytes);
  const float one = 1.0f, zero = 0.0f;
  KOLO_CUDNN_CHECK(cudnnConvolutionForward(context_.cudnn(), &one, d.x.get(), xr, d.w.get(), wr, call.conv.get(),
                                           static_cast<cudnnConvolutionFwdAlgo_t>(plan.choice.algorithm),
                                           workspace.get(), plan.choice.workspace_bytes, &zero, d.y.get(), yr));
  call.finish(yr, y, call.y_dims(), plan.layout, false);
  if (b != nullptr) launch::add_channel_bias(context_.stream(), s.batch, s.out_channels, s.out_height() * s.out_width(), y, b);
}

void CudaKernels::conv2d_backward(const ConvShape& s, const float* x, const float* w, const float* dy, float* dx,
                                  float* dw, float* db) {
  ops::cuda::DeviceGuard on(context_.index());
  ConvCall call(context_, s);
  const float one = 1.0f, zero = 0.0f;
  if (db != nullptr) add_channel_sums(s.batch, s.out_channels, s.out_height() * s.out_width(), dy, db);
  if (dx != nullptr) {
    void* dxr = call.result(dx, call.x_dims());
    const LayoutChoice plan =
        call.plan(algorithms_, ConvPass::BackwardData, [&](const LayoutDescs& d, Layout layout, std::size_t limit) {
          const void* wr = call.operand(w, call.w_dims(), layout);
          const void* dyr = call.operand(dy, call.y_dims(), layout);
          std::size_t bytes = 0;
          auto workspace = call.search_workspace(limit, bytes);
          cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
          int returned = 0;
          KOLO_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(
              context_.cudnn(), d.w.get(), wr, d.y.get(), dyr, call.conv.get(), d.x.get(), dxr,
              CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned, perf, workspace.get(), bytes));
          return candidates(perf, returned);
        });
    const LayoutDescs& d = call.descs(plan.layout);
    const void* wr = call.operand(w, call.w_dims(), plan.layout);
    const void* dyr = call.operand(dy, call.y_dims(), plan.layout);
    auto workspace = context_.allocate(plan.choice.workspace_bytes);
    KOLO_CUDNN_CHECK(cudnnConvolutionBackwardData(
        context_.cudnn(), &one, d.w.get(), wr, d.y.get(), dyr, call.conv.get(),
        static_cast<cudnnConvolutionBwdDataAlgo_t>(plan.choice.algorithm), workspace.get(),
        plan.choice.workspace_bytes, &zero, d.x.get(), dxr));
    call.finish(dxr, dx, call.x_dims(), plan.layout, false);
  }
  // dw accumulates: cuDNN adds (beta = 1) in float32; in reduced precision the product goes
  // to a buffer first and is added while cast back.
  void* dwr = call.result(dw, call.w_dims());
  const LayoutChoice plan =
      call.plan(algorithms_, ConvPass::BackwardFilter, [&](const LayoutDescs& d, Layout layout, std::size_t limit) {
        const void* xr = call.operand(x, call.x_dims(), layout);
        const void* dyr = call.operand(dy, call.y_dims(), layout);
        std::size_t bytes = 0;
        auto workspace = call.search_workspace(limit, bytes);
        // The trials overwrite their output: measure into scratch, not into the gradient.
        auto scratch = context_.allocate(static_cast<std::size_t>(call.w_dims().count()) * dtype_size(call.dtype));
        cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
        int returned = 0;
        KOLO_CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(
            context_.cudnn(), d.x.get(), xr, d.y.get(), dyr, call.conv.get(), d.w.get(), scratch.get(),
            CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &returned, perf, workspace.get(), bytes));
        return candidates(perf, returned);
      });
  const LayoutDescs& d = call.descs(plan.layout);
  const void* xr = call.operand(x, call.x_dims(), plan.layout);
  const void* dyr = call.operand(dy, call.y_dims(), plan.layout);
  auto workspace = context_.allocate(plan.choice.workspace_bytes);
  const float* beta = call.reduced() ? &zero : &one;
  KOLO_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
      context_.cudnn(), &one, d.x.get(), xr, d.y.get(), dyr, call.conv.get(),
      static_cast<cudnnConvolutionBwdFilterAlgo_t>(plan.choice.algorithm), workspace.get(),
      plan.choice.workspace_bytes, beta, d.w.get(), dwr));
  call.finish(dwr, dw, call.w_dims(), plan.layout, true);
}

}  // namespace kolo::models::cuda
