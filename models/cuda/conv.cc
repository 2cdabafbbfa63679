// Convolutions through cuDNN's legacy API (still in cuDNN 9, and the simplest way to run a
// plain 2-D convolution): algorithms measured with cudnnFind*AlgorithmEx once per shape,
// precision and pass (ConvAlgorithmCache), workspaces from the caching allocator.
//
// In float16/bfloat16 precision (set_compute_precision) the operands are cast into
// temporary buffers, cuDNN computes in the reduced type with float32 accumulation, and the
// results are cast back (dw is added to the float32 gradient): storage stays float32.
#include <vector>

#include "models/cuda/cuda_backend.h"
#include "models/cuda/device_guard.h"
#include "models/cuda/library_check.h"

namespace kolo::models::cuda {
namespace {

cudnnDataType_t cudnn_type(DType d) {
  switch (d) {
    case DType::Float16: return CUDNN_DATA_HALF;
    case DType::BFloat16: return CUDNN_DATA_BFLOAT16;
    default: return CUDNN_DATA_FLOAT;
  }
}

class TensorDesc {
 public:
  TensorDesc(int64_t n, int64_t c, int64_t h, int64_t w, DType dtype) {
    KOLO_CUDNN_CHECK(cudnnCreateTensorDescriptor(&d_));
    KOLO_CUDNN_CHECK(cudnnSetTensor4dDescriptor(d_, CUDNN_TENSOR_NCHW, cudnn_type(dtype), int(n), int(c), int(h), int(w)));
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
  FilterDesc(const ConvShape& s, DType dtype) {
    KOLO_CUDNN_CHECK(cudnnCreateFilterDescriptor(&d_));
    KOLO_CUDNN_CHECK(cudnnSetFilter4dDescriptor(d_, cudnn_type(dtype), CUDNN_TENSOR_NCHW, int(s.out_channels),
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

// Everything one convolution call needs: descriptors in the compute precision, and the
// operands in it (cast copies when it is not float32).
struct ConvCall {
  ConvCall(DeviceContext& context, const ConvShape& s)
      : context(context),
        shape(s),
        dtype(context.precision.load()),
        tf32(dtype == DType::Float32 && context.allow_tf32.load()),
        x_desc(s.batch, s.in_channels, s.height, s.width, dtype),
        y_desc(s.batch, s.out_channels, s.out_height(), s.out_width(), dtype),
        w_desc(s, dtype),
        conv(s, dtype != DType::Float32 ? CUDNN_TENSOR_OP_MATH : tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH) {}

  int64_t x_count() const { return shape.batch * shape.in_channels * shape.height * shape.width; }
  int64_t y_count() const { return shape.batch * shape.out_channels * shape.out_height() * shape.out_width(); }
  int64_t w_count() const { return shape.out_channels * shape.in_channels * shape.kernel * shape.kernel; }
  bool reduced() const { return dtype != DType::Float32; }

  // `data` in the compute precision: itself, or a cast copy kept alive by this call.
  const void* operand(const float* data, int64_t count) {
    if (!reduced()) return data;
    std::shared_ptr<void> copy = context.allocate(static_cast<std::size_t>(count) * dtype_size(dtype));
    kernels::to_reduced(context.stream(), count, data, copy.get(), dtype);
    keep.push_back(copy);
    return copy.get();
  }
  // Where a result of `count` elements is written: `out` itself, or a reduced buffer that
  // finish() casts into `out`.
  void* result(float* out, int64_t count) {
    if (!reduced()) return out;
    std::shared_ptr<void> buffer = context.allocate(static_cast<std::size_t>(count) * dtype_size(dtype));
    keep.push_back(buffer);
    return buffer.get();
  }
  void finish(const void* result, float* out, int64_t count, bool accumulate) {
    if (reduced()) kernels::from_reduced(context.stream(), count, result, dtype, out, accumulate);
  }
  ConvKey key(ConvPass pass) const {
    return {pass, shape.batch, shape.in_channels, shape.height, shape.width, shape.out_channels, shape.kernel,
            shape.stride, shape.padding, dtype, Layout::NCHW, tf32};
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
  const bool tf32;  // before conv: it chooses the math type
  TensorDesc x_desc, y_desc;
  FilterDesc w_desc;
  ConvDesc conv;
  std::vector<std::shared_ptr<void>> keep;
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

void CudaBackend::conv2d_forward(const ConvShape& s, const float* x, const float* w, const float* b, float* y) {
  DeviceGuard on(context_.index());
  ConvCall call(context_, s);
  const void* xr = call.operand(x, call.x_count());
  const void* wr = call.operand(w, call.w_count());
  void* yr = call.result(y, call.y_count());
  const ConvChoice choice = algorithms_.choose(call.key(ConvPass::Forward), [&](const ConvKey&, std::size_t limit) {
    std::size_t bytes = 0;
    auto workspace = call.search_workspace(limit, bytes);
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int returned = 0;
    KOLO_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(
        context_.cudnn(), call.x_desc.get(), xr, call.w_desc.get(), wr, call.conv.get(), call.y_desc.get(), yr,
        CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf, workspace.get(), bytes));
    return candidates(perf, returned);
  });
  call.conv.set_math(static_cast<cudnnMathType_t>(choice.math_type));
  auto workspace = context_.allocate(choice.workspace_bytes);
  const float one = 1.0f, zero = 0.0f;
  KOLO_CUDNN_CHECK(cudnnConvolutionForward(context_.cudnn(), &one, call.x_desc.get(), xr, call.w_desc.get(), wr,
                                           call.conv.get(), static_cast<cudnnConvolutionFwdAlgo_t>(choice.algorithm),
                                           workspace.get(), choice.workspace_bytes, &zero, call.y_desc.get(), yr));
  call.finish(yr, y, call.y_count(), false);
  if (b != nullptr) kernels::add_channel_bias(context_.stream(), s.batch, s.out_channels, s.out_height() * s.out_width(), y, b);
}

void CudaBackend::conv2d_backward(const ConvShape& s, const float* x, const float* w, const float* dy, float* dx,
                                  float* dw, float* db) {
  DeviceGuard on(context_.index());
  ConvCall call(context_, s);
  const float one = 1.0f, zero = 0.0f;
  if (db != nullptr) add_channel_sums(s.batch, s.out_channels, s.out_height() * s.out_width(), dy, db);
  const void* dyr = call.operand(dy, call.y_count());
  if (dx != nullptr) {
    const void* wr = call.operand(w, call.w_count());
    void* dxr = call.result(dx, call.x_count());
    const ConvChoice choice =
        algorithms_.choose(call.key(ConvPass::BackwardData), [&](const ConvKey&, std::size_t limit) {
          std::size_t bytes = 0;
          auto workspace = call.search_workspace(limit, bytes);
          cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
          int returned = 0;
          KOLO_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(
              context_.cudnn(), call.w_desc.get(), wr, call.y_desc.get(), dyr, call.conv.get(), call.x_desc.get(), dxr,
              CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned, perf, workspace.get(), bytes));
          return candidates(perf, returned);
        });
    call.conv.set_math(static_cast<cudnnMathType_t>(choice.math_type));
    auto workspace = context_.allocate(choice.workspace_bytes);
    KOLO_CUDNN_CHECK(cudnnConvolutionBackwardData(
        context_.cudnn(), &one, call.w_desc.get(), wr, call.y_desc.get(), dyr, call.conv.get(),
        static_cast<cudnnConvolutionBwdDataAlgo_t>(choice.algorithm), workspace.get(), choice.workspace_bytes, &zero,
        call.x_desc.get(), dxr));
    call.finish(dxr, dx, call.x_count(), false);
  }
  const void* xr = call.operand(x, call.x_count());
  // dw accumulates: cuDNN adds (beta = 1) in float32; in reduced precision the product goes
  // to a buffer first and is added while cast back.
  void* dwr = call.result(dw, call.w_count());
  const ConvChoice choice =
      algorithms_.choose(call.key(ConvPass::BackwardFilter), [&](const ConvKey&, std::size_t limit) {
        std::size_t bytes = 0;
        auto workspace = call.search_workspace(limit, bytes);
        // The trials overwrite their output: measure into scratch, not into the gradient.
        auto scratch = context_.allocate(static_cast<std::size_t>(call.w_count()) * dtype_size(call.dtype));
        cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
        int returned = 0;
        KOLO_CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(
            context_.cudnn(), call.x_desc.get(), xr, call.y_desc.get(), dyr, call.conv.get(), call.w_desc.get(),
            scratch.get(), CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &returned, perf, workspace.get(), bytes));
        return candidates(perf, returned);
      });
  call.conv.set_math(static_cast<cudnnMathType_t>(choice.math_type));
  auto workspace = context_.allocate(choice.workspace_bytes);
  const float* beta = call.reduced() ? &zero : &one;
  KOLO_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
      context_.cudnn(), &one, call.x_desc.get(), xr, call.y_desc.get(), dyr, call.conv.get(),
      static_cast<cudnnConvolutionBwdFilterAlgo_t>(choice.algorithm), workspace.get(), choice.workspace_bytes, beta,
      call.w_desc.get(), dwr));
  call.finish(dwr, dw, call.w_count(), true);
}

}  // namespace kolo::models::cuda
