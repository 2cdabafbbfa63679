// Convolution as im2col + GEMM. Images are processed in groups wide enough (in output
// pixels) to keep the GEMM efficient even where the feature maps are tiny (ResNet's last
// stages at 32×32 inputs have 1×1 maps); groups run in parallel, or, where there are too
// few of them to share out, each group's work is split across the threads.
#include <algorithm>
#include <map>
#include <tuple>
#include <cstring>
#include <vector>

#include "conv_paths.h"
#include "kolo/models.h"
#include "eigen.h"
#include "thread_pool.h"

namespace kolo::models::cpu {
namespace {

constexpr int64_t kMinGemmColumns = 256;

// For each kernel tap (r, k) and each output pixel (p, q), the offset of the input pixel
// it reads within a channel plane, or -1 where it falls in the padding. The same for every
// channel: small maps gather through it (ImageGroup::small_map_table).
const std::vector<int32_t>& tap_offsets(const ConvShape& s) {
  struct Key {
    int64_t height, width, kernel, stride, padding;
    bool operator<(const Key& o) const {
      return std::tie(height, width, kernel, stride, padding) < std::tie(o.height, o.width, o.kernel, o.stride, o.padding);
    }
  };
  thread_local std::map<Key, std::vector<int32_t>> cache;
  const Key key{s.height, s.width, s.kernel, s.stride, s.padding};
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  const int64_t P = s.out_height(), Q = s.out_width(), K = s.kernel;
  std::vector<int32_t> offsets(static_cast<std::size_t>(K * K * P * Q));
  for (int64_t r = 0; r < K; ++r)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t p = 0; p < P; ++p)
        for (int64_t q = 0; q < Q; ++q) {
          const int64_t ih = p * s.stride - s.padding + r, iw = q * s.stride - s.padding + k;
          const bool inside = ih >= 0 && ih < s.height && iw >= 0 && iw < s.width;
          offsets[static_cast<std::size_t>(((r * K + k) * P + p) * Q + q)] =
              inside ? static_cast<int32_t>(ih * s.width + iw) : -1;
        }
  return cache.emplace(key, std::move(offsets)).first->second;
}

// The kernel taps (r·K + k) the GEMMs work on, in order. Taps that see only padding for
// every output pixel (a 3×3 convolution on a 1×1 map uses just its centre tap, as in
// ResNet's last stage at 32×32 inputs) contribute nothing, and leaving them out of the
// column matrix and the GEMMs is 9× less arithmetic there. It costs a gather of the live
// taps' weights, which reads all the weights' cache lines, so it pays only where most
// taps are dead (measured on ResNet-18's last stage: with 1 live tap of 9 a convolution
// takes half the time, with 4 of 9 a third more).
std::vector<int32_t> gemm_taps(const ConvShape& s) {
  auto reads_input = [&](int64_t tap, int64_t outputs, int64_t size) {
    for (int64_t o = 0; o < outputs; ++o)
      if (const int64_t i = o * s.stride - s.padding + tap; i >= 0 && i < size) return true;
    return false;
  };
  std::vector<int32_t> live;
  for (int64_t r = 0; r < s.kernel; ++r)
    for (int64_t k = 0; k < s.kernel; ++k)
      if (reads_input(r, s.out_height(), s.height) && reads_input(k, s.out_width(), s.width))
        live.push_back(static_cast<int32_t>(r * s.kernel + k));
  const int64_t all = s.kernel * s.kernel;
  if (3 * static_cast<int64_t>(live.size()) <= all) return live;
  std::vector<int32_t> every(static_cast<std::size_t>(all));
  for (int64_t t = 0; t < all; ++t) every[static_cast<std::size_t>(t)] = static_cast<int32_t>(t);
  return every;
}

// With output rows at least this wide, im2col and col2im work row by row: each (tap,
// output row) is one run of the input row (contiguous at stride 1) plus zeros at the
// edges, which the compiler vectorises. Narrower rows (ResNet's 4×4 and smaller late
// maps) go through a per-pixel offset table instead: there the per-row bookkeeping
// would cost as much as the GEMM itself.
constexpr int64_t kMinRowWidth = 8;

bool by_rows(const ConvShape& s) { return s.out_width() >= kMinRowWidth; }

int64_t ceil_div(int64_t a, int64_t b) { return a > 0 ? (a + b - 1) / b : -((-a) / b); }

// For each tap column k, the output columns [lo, hi) whose input column
// q·stride − padding + k lies inside a row. Worked out once per call: the divisions cost
// more than a small map's row copies.
std::vector<std::pair<int64_t, int64_t>> inside_columns(const ConvShape& s) {
  std::vector<std::pair<int64_t, int64_t>> bounds(static_cast<std::size_t>(s.kernel));
  for (int64_t k = 0; k < s.kernel; ++k) {
    const int64_t lo = std::max<int64_t>(0, ceil_div(s.padding - k, s.stride));
    const int64_t hi = std::min<int64_t>(s.out_width(), ceil_div(s.width + s.padding - k, s.stride));
    bounds[static_cast<std::size_t>(k)] = {lo, std::max(lo, hi)};
  }
  return bounds;
}

// Column matrix of one image (rows at least kMinRowWidth wide), channels [c0, c1): row
// (c, j) for the j-th of the `taps`, columns [offset, offset + P*Q) of a row-major matrix
// with `ld` columns.
void im2col(const ConvShape& s, const std::vector<int32_t>& taps, const float* x, int64_t c0, int64_t c1,
            float* col, int64_t ld, int64_t offset) {
  const int64_t P = s.out_height(), Q = s.out_width(), K = s.kernel;
  const int64_t L = static_cast<int64_t>(taps.size());
  const auto bounds = inside_columns(s);
  for (int64_t c = c0; c < c1; ++c) {
    const float* plane = x + c * s.height * s.width;
    for (int64_t j = 0; j < L; ++j) {
      const int64_t r = taps[j] / K, k = taps[j] % K;
      float* out = col + (c * L + j) * ld + offset;
      const auto [lo, hi] = bounds[static_cast<std::size_t>(k)];
      for (int64_t p = 0; p < P; ++p, out += Q) {
        const int64_t ih = p * s.stride - s.padding + r;
        if (ih < 0 || ih >= s.height) {
          std::fill(out, out + Q, 0.0f);
          continue;
        }
        std::fill(out, out + lo, 0.0f);
        const float* row = plane + ih * s.width;
        const int64_t shift = k - s.padding;
        if (s.stride == 1)
          std::copy(row + lo + shift, row + hi + shift, out + lo);
        else
          for (int64_t q = lo; q < hi; ++q) out[q] = row[q * s.stride + shift];
        std::fill(out + hi, out + Q, 0.0f);
      }
    }
  }
}

// The adjoint of im2col: overwrites channels [c0, c1) of the image gradient with the
// column matrix's contributions, added tap by tap.
void col2im(const ConvShape& s, const std::vector<int32_t>& taps, const float* col, int64_t ld, int64_t offset,
            int64_t c0, int64_t c1, float* dx) {
  const int64_t P = s.out_height(), Q = s.out_width(), K = s.kernel;
  const int64_t L = static_cast<int64_t>(taps.size()), HW = s.height * s.width;
  const auto bounds = inside_columns(s);
  for (int64_t c = c0; c < c1; ++c) {
    float* plane = dx + c * HW;
    std::fill(plane, plane + HW, 0.0f);
    for (int64_t j = 0; j < L; ++j) {
      const int64_t r = taps[j] / K, k = taps[j] % K;
      const float* in = col + (c * L + j) * ld + offset;
      const auto [lo, hi] = bounds[static_cast<std::size_t>(k)];
      for (int64_t p = 0; p < P; ++p, in += Q) {
        const int64_t ih = p * s.stride - s.padding + r;
        if (ih < 0 || ih >= s.height) continue;
        float* row = plane + ih * s.width;
        const int64_t shift = k - s.padding;
        for (int64_t q = lo; q < hi; ++q) row[q * s.stride + shift] += in[q];
      }
    }
  }
}

bool is_pointwise(const ConvShape& s) { return s.kernel == 1 && s.stride == 1 && s.padding == 0; }

// Per-thread scratch, grown on demand and kept between calls: 0 the column matrix, 1 a
// group's outputs or output gradients, 2 the column gradient, 3 the live taps' weights,
// 4 their weight gradient.
float* scratch(int which, int64_t count) {
  thread_local std::vector<float> buffers[5];
  std::vector<float>& b = buffers[which];
  if (static_cast<int64_t>(b.size()) < count) b.resize(static_cast<std::size_t>(count));
  return b.data();
}

// Runs body(begin, end) over [0, count): on the pool when `split`, else on this thread.
template <typename Body>
void maybe_parallel(bool split, int64_t count, Body&& body) {
  if (split)
    parallel_for(count, [&](int64_t begin, int64_t end, int) { body(begin, end); });
  else
    body(0, count);
}

// One group of images [n0, n0 + images), convolved as one GEMM with images·P·Q columns.
// Either a thread runs a whole group (split = false; groups run in parallel), or the
// group's work is split across the threads (split = true): im2col and col2im by channel,
// the GEMMs by rows. The second is for convolutions with fewer groups than threads can
// share evenly: ResNet's late stages, whose 1×1 to 4×4 maps make one group of the batch.
class ImageGroup {
 public:
  ImageGroup(const ConvShape& s, const std::vector<int32_t>& taps, int64_t n0, int64_t images, bool split)
      : s_(s), taps_(taps), n0_(n0), images_(images), split_(split), PQ_(s.out_height() * s.out_width()),
        HW_(s.height * s.width), L_(static_cast<int64_t>(taps.size())), CRS_(s.in_channels * L_), cols_(images * PQ_),
        single_(images == 1) {}

  // The (C·taps) × cols column matrix: the input itself for a single image under a
  // pointwise convolution, else built in scratch.
  const float* columns(const float* x) const {
    if (single_ && is_pointwise(s_)) return x + n0_ * s_.in_channels * HW_;
    float* buffer = scratch(0, CRS_ * cols_);
    if (by_rows(s_)) {
      maybe_parallel(split_, s_.in_channels, [&](int64_t c0, int64_t c1) {
        for (int64_t i = 0; i < images_; ++i)
          im2col(s_, taps_, x + (n0_ + i) * s_.in_channels * HW_, c0, c1, buffer, cols_, i * PQ_);
      });
      return buffer;
    }
    const int64_t* table = small_map_table();
    const float* first = x + n0_ * s_.in_channels * HW_;
    maybe_parallel(split_, s_.in_channels, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c)
        for (int64_t j = 0; j < L_; ++j) {
          const float* plane = first + c * HW_;
          const int64_t* from = table + j * cols_;
          float* out = buffer + (c * L_ + j) * cols_;
          for (int64_t col = 0; col < cols_; ++col) out[col] = from[col] >= 0 ? plane[from[col]] : 0.0f;
        }
    });
    return buffer;
  }

  // For maps narrower than kMinRowWidth, the offset table of the whole group: entry
  // (j, column i·PQ + pixel) is where image i's pixel reads tap j, relative to the group's
  // first image in the same channel (-1: padding). Then each (channel, tap) is one loop
  // over all the group's columns, not one per image of just 4 or 16 pixels (30 % faster
  // on ResNet-18's 4×4 and 2×2 convolutions). This thread's, shared with the workers.
  const int64_t* small_map_table() const {
    thread_local std::vector<int64_t> table;
    table.resize(static_cast<std::size_t>(L_ * cols_));
    const int32_t* offsets = tap_offsets(s_).data();
    for (int64_t j = 0; j < L_; ++j)
      for (int64_t i = 0; i < images_; ++i)
        for (int64_t pixel = 0; pixel < PQ_; ++pixel) {
          const int32_t at = offsets[taps_[j] * PQ_ + pixel];
          table[static_cast<std::size_t>(j * cols_ + i * PQ_ + pixel)] = at < 0 ? -1 : i * s_.in_channels * HW_ + at;
        }
    return table.data();
  }

  // The adjoint of columns(): overwrites the group's input gradient, channels [c0, c1).
  void add_columns(const float* dcol, const int64_t* table, int64_t c0, int64_t c1, float* dx) const {
    if (table == nullptr) {
      for (int64_t i = 0; i < images_; ++i)
        col2im(s_, taps_, dcol, cols_, i * PQ_, c0, c1, dx + (n0_ + i) * s_.in_channels * HW_);
      return;
    }
    float* first = dx + n0_ * s_.in_channels * HW_;
    for (int64_t c = c0; c < c1; ++c) {
      for (int64_t i = 0; i < images_; ++i) {
        float* plane = first + (i * s_.in_channels + c) * HW_;
        std::fill(plane, plane + HW_, 0.0f);
      }
      for (int64_t j = 0; j < L_; ++j) {
        const int64_t* to = table + j * cols_;
        const float* in = dcol + (c * L_ + j) * cols_;
        float* plane = first + c * HW_;
        for (int64_t col = 0; col < cols_; ++col)
          if (to[col] >= 0) plane[to[col]] += in[col];
      }
    }
  }

  void forward(const float* x, const float* w, const float* b, float* y) const {
    const ConstMatrixMap col(columns(x), CRS_, cols_);
    const int64_t K = s_.out_channels;
    // A single image's output is already K × PQ: the GEMM writes it in place.
    float* out = single_ ? y + n0_ * K * PQ_ : scratch(1, K * cols_);
    maybe_parallel(split_, K, [&](int64_t k0, int64_t k1) {
      MatrixMap(out + k0 * cols_, k1 - k0, cols_).noalias() =
          ConstMatrixMap(w, K, CRS_).middleRows(k0, k1 - k0) * col;
      for (int64_t i = 0; i < images_; ++i)
        for (int64_t k = k0; k < k1; ++k) {
          float* dst = y + ((n0_ + i) * K + k) * PQ_;
          if (!single_) std::memcpy(dst, out + k * cols_ + i * PQ_, sizeof(float) * PQ_);
          if (b != nullptr)
            for (int64_t j = 0; j < PQ_; ++j) dst[j] += b[k];
        }
    });
  }

  // dw += dY·colᵀ and db += Σ dY over this group; dx of its images (if dx is not null).
  // When not split, dw and db may be a thread's private partial sums.
  void backward(const float* x, const float* w, const float* dy, float* dx, float* dw, double* db) const {
    const float* col = columns(x);
    const int64_t K = s_.out_channels;
    float* gathered = single_ ? nullptr : scratch(1, K * cols_);
    const float* dyc = single_ ? dy + n0_ * K * PQ_ : gathered;
    maybe_parallel(split_, K, [&](int64_t k0, int64_t k1) {
      if (!single_)  // gather the group's output gradients into K × cols
        for (int64_t i = 0; i < images_; ++i)
          for (int64_t k = k0; k < k1; ++k)
            std::memcpy(gathered + k * cols_ + i * PQ_, dy + ((n0_ + i) * K + k) * PQ_, sizeof(float) * PQ_);
      MatrixMap(dw + k0 * CRS_, k1 - k0, CRS_).noalias() +=
          ConstMatrixMap(dyc + k0 * cols_, k1 - k0, cols_) * ConstMatrixMap(col, CRS_, cols_).transpose();
      if (db != nullptr)
        for (int64_t k = k0; k < k1; ++k) {
          double sum = 0;
          for (int64_t j = 0; j < cols_; ++j) sum += dyc[k * cols_ + j];
          db[k] += sum;
        }
    });
    if (dx == nullptr) return;
    const ConstMatrixMap weights(w, K, CRS_), dy_map(dyc, K, cols_);
    if (single_ && is_pointwise(s_)) {  // dx is the column gradient itself
      float* dxn = dx + n0_ * s_.in_channels * HW_;
      maybe_parallel(split_, CRS_, [&](int64_t r0, int64_t r1) {
        MatrixMap(dxn + r0 * cols_, r1 - r0, cols_).noalias() = weights.middleCols(r0, r1 - r0).transpose() * dy_map;
      });
      return;
    }
    float* dcol = scratch(2, CRS_ * cols_);
    const int64_t* table = by_rows(s_) ? nullptr : small_map_table();
    maybe_parallel(split_, s_.in_channels, [&](int64_t c0, int64_t c1) {
      const int64_t r0 = c0 * L_, rows = (c1 - c0) * L_;
      MatrixMap(dcol + r0 * cols_, rows, cols_).noalias() = weights.middleCols(r0, rows).transpose() * dy_map;
      add_columns(dcol, table, c0, c1, dx);
    });
  }

 private:
  const ConvShape& s_;
  const std::vector<int32_t>& taps_;
  int64_t n0_, images_;
  bool split_;
  int64_t PQ_, HW_, L_, CRS_, cols_;
  bool single_;
};

// Images are grouped so that each GEMM has at least kMinGemmColumns columns.
struct Grouping {
  std::vector<int32_t> taps = {};  // gemm_taps()
  int64_t images_per_group, groups;
  bool split;  // split each group across the threads instead of running groups in parallel

  explicit Grouping(const ConvShape& s) : taps(gemm_taps(s)) {
    const int64_t pixels = std::max<int64_t>(1, s.out_height() * s.out_width());
    images_per_group = std::clamp<int64_t>((kMinGemmColumns + pixels - 1) / pixels, 1, s.batch);
    groups = (s.batch + images_per_group - 1) / images_per_group;
    // Whole groups per thread only when they share out evenly enough (3 groups on 2
    // threads would leave one idle a third of the time).
    const int threads = num_threads();
    split = threads > 1 && groups < 4 * threads && groups % threads != 0;
  }
  ImageGroup group(const ConvShape& s, int64_t index) const {
    const int64_t n0 = index * images_per_group;
    return ImageGroup(s, taps, n0, std::min(images_per_group, s.batch - n0), split);
  }
  bool uses_all_taps(const ConvShape& s) const { return static_cast<int64_t>(taps.size()) == s.kernel * s.kernel; }
};

// Rows of K·C weights, each with its kernel's taps: `all` per row in `from`, the live ones
// (taps) per row in `to`. Gathering goes from `from`'s layout to `to`'s; scattering adds back.
struct TapRows {
  const std::vector<int32_t>& taps;
  int64_t rows, all;

  void gather(const float* from, float* to) const {
    const int64_t live = static_cast<int64_t>(taps.size());
    // Memory-bound (it reads every weight's cache line), and worth sharing out.
    parallel_for(rows, [&](int64_t begin, int64_t end, int) {
      for (int64_t row = begin; row < end; ++row)
        for (int64_t j = 0; j < live; ++j) to[row * live + j] = from[row * all + taps[j]];
    });
  }
  void scatter_add(const float* from, float* to) const {
    const int64_t live = static_cast<int64_t>(taps.size());
    parallel_for(rows, [&](int64_t begin, int64_t end, int) {
      for (int64_t row = begin; row < end; ++row)
        for (int64_t j = 0; j < live; ++j) to[row * all + taps[j]] += from[row * live + j];
    });
  }
};

// The weights of the live taps only (w itself when all are live), in this thread's scratch.
const float* live_weights(const ConvShape& s, const Grouping& g, const float* w) {
  if (g.uses_all_taps(s)) return w;
  const TapRows rows{g.taps, s.out_channels * s.in_channels, s.kernel * s.kernel};
  float* live = scratch(3, rows.rows * static_cast<int64_t>(g.taps.size()));
  rows.gather(w, live);
  return live;
}

}  // namespace

bool im2col_skips_dead_taps(const ConvShape& s) { return !Grouping(s).uses_all_taps(s); }

void im2col_conv_forward(const ConvShape& s, const float* x, const float* w, const float* b, float* y) {
  const Grouping g(s);
  w = live_weights(s, g, w);
  if (g.split) {
    for (int64_t i = 0; i < g.groups; ++i) g.group(s, i).forward(x, w, b, y);
    return;
  }
  parallel_for(g.groups, [&](int64_t begin, int64_t end, int) {
    for (int64_t i = begin; i < end; ++i) g.group(s, i).forward(x, w, b, y);
  });
}

void im2col_conv_backward(const ConvShape& s, const float* x, const float* w, const float* dy, float* dx,
                          float* dw_all, float* db) {
  const Grouping g(s);
  const int64_t K = s.out_channels, CRS = s.in_channels * static_cast<int64_t>(g.taps.size());
  // With dead taps, the GEMMs work on the live taps' weights and gradients, and the
  // gradients are added into dw_all's layout at the end.
  w = live_weights(s, g, w);
  float* dw = dw_all;
  if (!g.uses_all_taps(s)) {
    dw = scratch(4, K * CRS);
    std::fill(dw, dw + K * CRS, 0.0f);
  }
  const TapRows tap_rows{g.taps, K * s.in_channels, s.kernel * s.kernel};
  auto finish = [&] {
    if (dw != dw_all) tap_rows.scatter_add(dw, dw_all);
  };
  std::vector<double> db_sum(db != nullptr ? static_cast<std::size_t>(K) : 0, 0.0);
  auto add_bias_grad = [&](const std::vector<double>& sums) {
    for (std::size_t k = 0; k < sums.size(); ++k) db[k] += static_cast<float>(sums[k]);
  };
  if (g.split) {
    for (int64_t i = 0; i < g.groups; ++i)
      g.group(s, i).backward(x, w, dy, dx, dw, db != nullptr ? db_sum.data() : nullptr);
    add_bias_grad(db_sum);
    finish();
    return;
  }
  // Each thread sums its groups' weight gradients privately; they are added at the end.
  const int threads = num_threads();
  std::vector<std::vector<float>> dw_partial(static_cast<std::size_t>(threads));
  std::vector<std::vector<double>> db_partial(static_cast<std::size_t>(threads));
  parallel_for(g.groups, [&](int64_t begin, int64_t end, int thread) {
    // Thread 0 accumulates straight into dw; the others into their own buffers.
    std::vector<float>& dw_t = dw_partial[static_cast<std::size_t>(thread)];
    if (thread > 0) dw_t.assign(static_cast<std::size_t>(K * CRS), 0.0f);
    std::vector<double>& db_t = db_partial[static_cast<std::size_t>(thread)];
    db_t.assign(db_sum.size(), 0.0);
    for (int64_t i = begin; i < end; ++i)
      g.group(s, i).backward(x, w, dy, dx, thread > 0 ? dw_t.data() : dw, db != nullptr ? db_t.data() : nullptr);
  });
  // The threads' partial weight gradients, added in thread order, each thread a slice.
  parallel_for(K * CRS, [&](int64_t begin, int64_t end, int) {
    for (int t = 1; t < threads; ++t) {
      const std::vector<float>& part = dw_partial[static_cast<std::size_t>(t)];
      if (part.empty()) continue;  // a thread that got no group
      for (int64_t i = begin; i < end; ++i) dw[i] += part[static_cast<std::size_t>(i)];
    }
  });
  for (int t = 0; t < threads; ++t) add_bias_grad(db_partial[static_cast<std::size_t>(t)]);
  finish();
}

}  // namespace kolo::models::cpu
