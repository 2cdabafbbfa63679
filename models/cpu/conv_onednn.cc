// Convolutions through oneDNN, the library PyTorch's CPU convolutions run on. Its JIT
// direct kernels work on blocked layouts (channels in groups of 16) and reach several
// times the arithmetic rate of im2col + GEMM on ResNet's 3×3 convolutions. kolo keeps
// NCHW everywhere else, so each call reorders its operands into the layouts the
// primitive wants and its results back; those reorders are part of every timing.
//
// Threads: each of kolo's threads runs oneDNN single-threaded on its own slice of the
// batch. One pool of threads (kolo's) then does all the work, instead of oneDNN's OpenMP
// team and kolo's pool taking turns spinning on the same cores.
#include <dnnl.hpp>
#if DNNL_CPU_RUNTIME == DNNL_RUNTIME_OMP
#include <omp.h>
#endif

#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "conv_paths.h"
#include "kolo/models.h"
#include "thread_pool.h"

namespace kolo::models::cpu {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

// Never destroyed: kolo's pool threads, whose thread_local primitives and streams use it,
// may outlive any static.
const dnnl::engine& engine() {
  static const dnnl::engine* cpu = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *cpu;
}

// oneDNN on the calling thread alone while this lives. An OpenMP build of oneDNN sizes a
// primitive's work split from omp_get_max_threads() when the primitive is created, and
// starts that many threads to run it (a second team beside kolo's pool, and different
// rounding). The caller's own OpenMP setting comes back afterwards.
class OnThisThreadOnly {
 public:
#if DNNL_CPU_RUNTIME == DNNL_RUNTIME_OMP
  OnThisThreadOnly() : saved_(omp_get_max_threads()) { omp_set_num_threads(1); }
  ~OnThisThreadOnly() { omp_set_num_threads(saved_); }

 private:
  int saved_;
#endif
};

dnnl::stream& thread_stream() {
  thread_local dnnl::stream stream(engine());
  return stream;
}

// A buffer grown on demand, 64-byte aligned like oneDNN's own.
class AlignedBuffer {
 public:
  float* floats(std::size_t count) {
    if (lines_.size() * kLine < count) lines_.resize((count + kLine - 1) / kLine);
    return data();
  }
  float* data() { return reinterpret_cast<float*>(lines_.data()); }

 private:
  static constexpr std::size_t kLine = 16;
  struct alignas(64) Line {
    float values[kLine];
  };
  std::vector<Line> lines_;
};

// Per-thread buffers for operands in oneDNN's layouts, kept between calls. kWeights also
// holds the weight gradient: the backward weights pass reads no weights.
enum Slot { kSource, kWeights, kDestination, kOutputGrad, kSlots };
void* scratch(Slot slot, std::size_t bytes) {
  thread_local AlignedBuffer buffers[kSlots];
  return buffers[slot].floats((bytes + sizeof(float) - 1) / sizeof(float));
}

// A primitive's operand: the caller's plain layout, the layout the primitive chose, and
// the reorder between them (none when they agree).
struct Operand {
  memory::desc plain, chosen;
  std::optional<dnnl::reorder> reorder;

  Operand(const memory::desc& plain_layout, const memory::desc& chosen_layout, bool into_chosen)
      : plain(plain_layout), chosen(chosen_layout) {
    if (plain == chosen) return;
    reorder = into_chosen ? dnnl::reorder(dnnl::reorder::primitive_desc(engine(), plain, engine(), chosen))
                          : dnnl::reorder(dnnl::reorder::primitive_desc(engine(), chosen, engine(), plain));
  }

  // An input: the caller's data in the chosen layout (reordered into `slot` if needed).
  memory input(const float* data, Slot slot) const {
    memory user(plain, engine(), const_cast<float*>(data));
    if (!reorder) return user;
    memory mine(chosen, engine(), scratch(slot, chosen.get_size()));
    reorder->execute(thread_stream(), user, mine);
    return mine;
  }
  // An output: where the primitive writes (the caller's memory, or `slot`)...
  memory output(float* data, Slot slot) const {
    return reorder ? memory(chosen, engine(), scratch(slot, chosen.get_size())) : memory(plain, engine(), data);
  }
  // ...and, after it ran, its result put back into the caller's layout.
  void finish(memory written, float* data) const {
    if (!reorder) return;
    memory user(plain, engine(), data);
    reorder->execute(thread_stream(), written, user);
  }
};

struct ConvDescs {
  memory::desc x, w, b, y;
  memory::dims strides, padding;

  ConvDescs(const ConvShape& s, int64_t batch)
      : x({batch, s.in_channels, s.height, s.width}, memory::data_type::f32, Tag::nchw),
        w({s.out_channels, s.in_channels, s.kernel, s.kernel}, memory::data_type::f32, Tag::oihw),
        b({s.out_channels}, memory::data_type::f32, Tag::a),
        y({batch, s.out_channels, s.out_height(), s.out_width()}, memory::data_type::f32, Tag::nchw),
        strides{s.stride, s.stride},
        padding{s.padding, s.padding} {}
  static memory::desc any(const memory::desc& d) { return memory::desc(d.dims(), d.data_type(), Tag::any); }
};

// The forward primitive for one batch slice, and the two backward ones, built when first
// needed (inference never builds them).
class Primitives {
 public:
  Primitives(const ConvShape& s, int64_t batch, bool bias)
      : d_(s, batch),
        bias_(bias),
        forward_pd_(dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                                    dnnl::algorithm::convolution_direct, ConvDescs::any(d_.x),
                                                    ConvDescs::any(d_.w), bias ? d_.b : memory::desc(),
                                                    ConvDescs::any(d_.y), d_.strides, d_.padding, d_.padding),
                    engine()),
        forward_(forward_pd_),
        fx_(d_.x, forward_pd_.src_desc(), true),
        fw_(d_.w, forward_pd_.weights_desc(), true),
        fy_(d_.y, forward_pd_.dst_desc(), false) {}

  void forward(const float* x, const float* w, const float* b, float* y) {
    dnnl::stream& stream = thread_stream();
    memory out = fy_.output(y, kDestination);
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, fx_.input(x, kSource)}, {DNNL_ARG_WEIGHTS, fw_.input(w, kWeights)}, {DNNL_ARG_DST, out}};
    if (bias_) args.emplace(DNNL_ARG_BIAS, memory(d_.b, engine(), const_cast<float*>(b)));
    forward_.execute(stream, args);
    fy_.finish(out, y);
    stream.wait();
  }

  // dx = the input gradient, dw and db = this slice's weight and bias gradients
  // (overwritten; each only if not null, db only with a bias).
  void backward(const float* x, const float* w, const float* dy, float* dx, float* dw, float* db) {
    dnnl::stream& stream = thread_stream();
    if (dx != nullptr) {
      BackwardData& bd = backward_data();
      memory out = bd.dx.output(dx, kDestination);
      bd.primitive.execute(stream, {{DNNL_ARG_DIFF_DST, bd.dy.input(dy, kOutputGrad)},
                                    {DNNL_ARG_WEIGHTS, bd.w.input(w, kWeights)},
                                    {DNNL_ARG_DIFF_SRC, out}});
      bd.dx.finish(out, dx);
    }
    if (dw == nullptr) {
      stream.wait();
      return;
    }
    BackwardWeights& bw = backward_weights();
    memory out = bw.dw.output(dw, kWeights);
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, bw.x.input(x, kSource)}, {DNNL_ARG_DIFF_DST, bw.dy.input(dy, kOutputGrad)},
        {DNNL_ARG_DIFF_WEIGHTS, out}};
    if (bias_) args.emplace(DNNL_ARG_DIFF_BIAS, memory(d_.b, engine(), db));
    bw.primitive.execute(stream, args);
    bw.dw.finish(out, dw);
    stream.wait();
  }

 private:
  struct BackwardData {
    dnnl::convolution_backward_data primitive;
    Operand dy, w, dx;
  };
  struct BackwardWeights {
    dnnl::convolution_backward_weights primitive;
    Operand x, dy, dw;
  };

  BackwardData& backward_data() {
    if (!backward_data_) {
      const dnnl::convolution_backward_data::primitive_desc pd(
          dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, ConvDescs::any(d_.x),
                                                ConvDescs::any(d_.w), ConvDescs::any(d_.y), d_.strides, d_.padding,
                                                d_.padding),
          engine(), forward_pd_);
      backward_data_.emplace(BackwardData{dnnl::convolution_backward_data(pd), Operand(d_.y, pd.diff_dst_desc(), true),
                                          Operand(d_.w, pd.weights_desc(), true),
                                          Operand(d_.x, pd.diff_src_desc(), false)});
    }
    return *backward_data_;
  }
  BackwardWeights& backward_weights() {
    if (!backward_weights_) {
      const dnnl::convolution_backward_weights::primitive_desc pd(
          dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, ConvDescs::any(d_.x),
                                                   ConvDescs::any(d_.w), bias_ ? d_.b : memory::desc(),
                                                   ConvDescs::any(d_.y), d_.strides, d_.padding, d_.padding),
          engine(), forward_pd_);
      backward_weights_.emplace(BackwardWeights{dnnl::convolution_backward_weights(pd),
                                                Operand(d_.x, pd.src_desc(), true),
                                                Operand(d_.y, pd.diff_dst_desc(), true),
                                                Operand(d_.w, pd.diff_weights_desc(), false)});
    }
    return *backward_weights_;
  }

  ConvDescs d_;
  bool bias_;
  dnnl::convolution_forward::primitive_desc forward_pd_;
  dnnl::convolution_forward forward_;
  Operand fx_, fw_, fy_;
  std::optional<BackwardData> backward_data_;
  std::optional<BackwardWeights> backward_weights_;
};

// This thread's primitives for a shape and batch slice, built on first use.
Primitives& primitives(const ConvShape& s, int64_t batch, bool bias) {
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool>;
  thread_local std::map<Key, std::unique_ptr<Primitives>> cache;
  const Key key{batch, s.in_channels, s.height, s.width, s.out_channels, s.kernel, s.stride, s.padding, bias};
  std::unique_ptr<Primitives>& entry = cache[key];
  if (!entry) entry = std::make_unique<Primitives>(s, batch, bias);
  return *entry;
}

int64_t input_size(const ConvShape& s) { return s.in_channels * s.height * s.width; }
int64_t output_size(const ConvShape& s) { return s.out_channels * s.out_height() * s.out_width(); }

}  // namespace

bool onednn_has_fast_kernel(const ConvShape& s) {
  // oneDNN has a reference implementation of everything ("ref:any"), far slower than
  // im2col + GEMM: where that is all it offers (no AVX2), kolo's own path runs.
  try {
    const OnThisThreadOnly alone;
    const ConvDescs d(s, s.batch);
    const dnnl::convolution_forward::primitive_desc pd(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                        ConvDescs::any(d.x), ConvDescs::any(d.w), ConvDescs::any(d.y), d.strides,
                                        d.padding, d.padding),
        engine());
    return !std::string_view(pd.impl_info_str()).starts_with("ref");
  } catch (const dnnl::error&) {
    return false;
  }
}

void onednn_conv_forward(const ConvShape& s, const float* x, const float* w, const float* b, float* y) {
  parallel_for(s.batch, [&](int64_t n0, int64_t n1, int) {
    const OnThisThreadOnly alone;
    primitives(s, n1 - n0, b != nullptr).forward(x + n0 * input_size(s), w, b, y + n0 * output_size(s));
  });
}

void onednn_conv_backward(const ConvShape& s, const float* x, const float* w, const float* dy, float* dx, float* dw,
                          float* db) {
  if (dw == nullptr) {  // the input gradient alone
    parallel_for(s.batch, [&](int64_t n0, int64_t n1, int) {
      const OnThisThreadOnly alone;
      primitives(s, n1 - n0, false)
          .backward(x + n0 * input_size(s), w, dy + n0 * output_size(s), dx + n0 * input_size(s), nullptr, nullptr);
    });
    return;
  }
  // Each thread's slice of the batch gives its own weight and bias gradients; they are
  // added into dw and db afterwards, in thread order (the same sums on every run).
  const int64_t weights = s.out_channels * s.in_channels * s.kernel * s.kernel;
  const int threads = num_threads();
  // The caller's, kept between calls (layer4's weight gradient alone is 9.4 MB a thread).
  // References, so that the workers use the caller's buffers, not thread_locals of their own.
  thread_local std::vector<AlignedBuffer> kept_dw, kept_db;
  std::vector<AlignedBuffer>& dw_part = kept_dw;
  std::vector<AlignedBuffer>& db_part = kept_db;
  if (dw_part.size() < static_cast<std::size_t>(threads)) {
    dw_part.resize(static_cast<std::size_t>(threads));
    db_part.resize(static_cast<std::size_t>(threads));
  }
  std::vector<char> ran(static_cast<std::size_t>(threads), 0);  // threads with a slice (batch < threads leaves some out)
  parallel_for(s.batch, [&](int64_t n0, int64_t n1, int thread) {
    const OnThisThreadOnly alone;
    const auto t = static_cast<std::size_t>(thread);
    primitives(s, n1 - n0, db != nullptr)
        .backward(x + n0 * input_size(s), w, dy + n0 * output_size(s), dx != nullptr ? dx + n0 * input_size(s) : nullptr,
                  dw_part[t].floats(static_cast<std::size_t>(weights)),
                  db != nullptr ? db_part[t].floats(static_cast<std::size_t>(s.out_channels)) : nullptr);
    ran[t] = 1;
  });
  parallel_for_elements(weights, [&](int64_t begin, int64_t end) {
    for (std::size_t t = 0; t < ran.size(); ++t)
      if (ran[t]) {
        const float* part = dw_part[t].data();
        for (int64_t i = begin; i < end; ++i) dw[i] += part[i];
      }
  });
  if (db != nullptr)
    for (std::size_t t = 0; t < ran.size(); ++t)
      if (ran[t])
        for (int64_t k = 0; k < s.out_channels; ++k) db[k] += db_part[t].data()[k];
}

}  // namespace kolo::models::cpu
