// Convolution as im2col + GEMM. Images are processed in groups wide enough (in output
// pixels) to keep the GEMM efficient even where the feature maps are tiny (ResNet's last
// stages at 32×32 inputs have 1×1 maps); groups run in parallel, one per thread.
#include <algorithm>
#include <map>
#include <tuple>
#include <cstring>
#include <vector>

#include "cpu_backend.h"
#include "kolo/models.h"
#include "eigen.h"
#include "thread_pool.h"

namespace kolo::models::cpu {
namespace {

constexpr int64_t kMinGemmColumns = 256;

// For each kernel tap (r, k) and each output pixel (p, q), the offset of the input pixel
// it reads within a channel plane, or -1 where it falls in the padding. The same for every
// channel, so im2col and col2im become one tight loop per (channel, tap) instead of one
// per output row: on ResNet's small late-stage maps (2×2, 4×4) the per-row bookkeeping
// used to cost as much as the GEMM itself.
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

// Column matrix of one image: row (c, r, k), columns [offset, offset + P*Q) of a
// row-major matrix with `ld` columns.
void im2col(const ConvShape& s, const float* x, float* col, int64_t ld, int64_t offset) {
  const int64_t PQ = s.out_height() * s.out_width(), taps = s.kernel * s.kernel;
  const int32_t* offsets = tap_offsets(s).data();
  for (int64_t c = 0; c < s.in_channels; ++c) {
    const float* plane = x + c * s.height * s.width;
    for (int64_t t = 0; t < taps; ++t) {
      float* out = col + (c * taps + t) * ld + offset;
      const int32_t* from = offsets + t * PQ;
      for (int64_t j = 0; j < PQ; ++j) out[j] = from[j] >= 0 ? plane[from[j]] : 0.0f;
    }
  }
}

// The adjoint of im2col: adds the column matrix back into the image gradient.
void col2im(const ConvShape& s, const float* col, int64_t ld, int64_t offset, float* dx) {
  const int64_t PQ = s.out_height() * s.out_width(), taps = s.kernel * s.kernel;
  const int32_t* offsets = tap_offsets(s).data();
  for (int64_t c = 0; c < s.in_channels; ++c) {
    float* plane = dx + c * s.height * s.width;
    for (int64_t t = 0; t < taps; ++t) {
      const float* in = col + (c * taps + t) * ld + offset;
      const int32_t* to = offsets + t * PQ;
      for (int64_t j = 0; j < PQ; ++j)
        if (to[j] >= 0) plane[to[j]] += in[j];
    }
  }
}

struct Grouping {
  int64_t images_per_group, groups;
};

Grouping group_images(const ConvShape& s) {
  const int64_t pixels = std::max<int64_t>(1, s.out_height() * s.out_width());
  const int64_t per_group = std::clamp<int64_t>((kMinGemmColumns + pixels - 1) / pixels, 1, s.batch);
  return {per_group, (s.batch + per_group - 1) / per_group};
}

bool is_pointwise(const ConvShape& s) { return s.kernel == 1 && s.stride == 1 && s.padding == 0; }

// Per-thread scratch, grown on demand and kept between calls.
std::vector<float>& scratch(int which) {
  thread_local std::vector<float> buffers[3];
  return buffers[which];
}
float* scratch(int which, int64_t count) {
  std::vector<float>& b = scratch(which);
  if (static_cast<int64_t>(b.size()) < count) b.resize(static_cast<std::size_t>(count));
  return b.data();
}

// The (C·k·k) × (images·P·Q) column matrix of images [n0, n0 + images): the input itself
// for a single image under a pointwise convolution, else built in this thread's scratch.
const float* column_matrix(const ConvShape& s, const float* x, int64_t n0, int64_t images) {
  const int64_t PQ = s.out_height() * s.out_width(), HW = s.height * s.width;
  if (images == 1 && is_pointwise(s)) return x + n0 * s.in_channels * HW;
  const int64_t cols = images * PQ;
  float* buffer = scratch(0, s.in_channels * s.kernel * s.kernel * cols);
  for (int64_t i = 0; i < images; ++i) im2col(s, x + (n0 + i) * s.in_channels * HW, buffer, cols, i * PQ);
  return buffer;
}

}  // namespace

void CpuBackend::conv2d_forward(const ConvShape& s, const float* x, const float* w, const float* b,
                                float* y) {
  const int64_t PQ = s.out_height() * s.out_width();
  const int64_t CRS = s.in_channels * s.kernel * s.kernel, K = s.out_channels;
  const Grouping g = group_images(s);
  const ConstMatrixMap weights(w, K, CRS);
  parallel_for(g.groups, [&](int64_t begin, int64_t end, int) {
    for (int64_t group = begin; group < end; ++group) {
      const int64_t n0 = group * g.images_per_group;
      const int64_t images = std::min(g.images_per_group, s.batch - n0);
      const int64_t cols = images * PQ;
      const float* col = column_matrix(s, x, n0, images);
      float* out = images == 1 ? y + n0 * K * PQ : scratch(1, K * cols);
      MatrixMap(out, K, cols).noalias() = weights * ConstMatrixMap(col, CRS, cols);
      for (int64_t i = 0; i < images; ++i) {
        float* yn = y + (n0 + i) * K * PQ;
        for (int64_t k = 0; k < K; ++k) {
          float* dst = yn + k * PQ;
          if (images > 1) std::memcpy(dst, out + k * cols + i * PQ, sizeof(float) * PQ);
          if (b != nullptr)
            for (int64_t j = 0; j < PQ; ++j) dst[j] += b[k];
        }
      }
    }
  });
}

void CpuBackend::conv2d_backward(const ConvShape& s, const float* x, const float* w, const float* dy,
                                 float* dx, float* dw, float* db) {
  const int64_t PQ = s.out_height() * s.out_width(), HW = s.height * s.width;
  const int64_t CRS = s.in_channels * s.kernel * s.kernel, K = s.out_channels;
  const Grouping g = group_images(s);
  const ConstMatrixMap weights(w, K, CRS);
  const int threads = num_threads();
  // Each thread sums its groups' weight gradients privately; they are added at the end.
  std::vector<std::vector<float>> dw_partial(static_cast<std::size_t>(threads));
  std::vector<std::vector<double>> db_partial(static_cast<std::size_t>(threads));
  parallel_for(g.groups, [&](int64_t begin, int64_t end, int thread) {
    // Thread 0 accumulates straight into dw; the others into their own buffers.
    std::vector<float>& dw_t = dw_partial[static_cast<std::size_t>(thread)];
    if (thread > 0) dw_t.assign(static_cast<std::size_t>(K * CRS), 0.0f);
    std::vector<double>& db_t = db_partial[static_cast<std::size_t>(thread)];
    db_t.assign(static_cast<std::size_t>(K), 0.0);
    MatrixMap dw_map(thread > 0 ? dw_t.data() : dw, K, CRS);
    for (int64_t group = begin; group < end; ++group) {
      const int64_t n0 = group * g.images_per_group;
      const int64_t images = std::min(g.images_per_group, s.batch - n0);
      const int64_t cols = images * PQ;
      const bool pointwise_single = images == 1 && is_pointwise(s);
      const float* col = column_matrix(s, x, n0, images);
      const float* dyc = dy + n0 * K * PQ;
      if (images > 1) {  // gather the group's output gradients into K × cols
        float* buffer = scratch(1, K * cols);
        for (int64_t i = 0; i < images; ++i)
          for (int64_t k = 0; k < K; ++k)
            std::memcpy(buffer + k * cols + i * PQ, dy + ((n0 + i) * K + k) * PQ, sizeof(float) * PQ);
        dyc = buffer;
      }
      const ConstMatrixMap dy_map(dyc, K, cols);
      dw_map.noalias() += dy_map * ConstMatrixMap(col, CRS, cols).transpose();
      if (db != nullptr)
        for (int64_t k = 0; k < K; ++k) {
          double sum = 0;
          for (int64_t j = 0; j < cols; ++j) sum += dyc[k * cols + j];
          db_t[static_cast<std::size_t>(k)] += sum;
        }
      if (dx == nullptr) continue;
      if (pointwise_single) {
        MatrixMap(dx + n0 * s.in_channels * HW, CRS, cols).noalias() = weights.transpose() * dy_map;
        continue;
      }
      float* dcol = scratch(2, CRS * cols);
      MatrixMap(dcol, CRS, cols).noalias() = weights.transpose() * dy_map;
      for (int64_t i = 0; i < images; ++i) {
        float* dxn = dx + (n0 + i) * s.in_channels * HW;
        std::fill(dxn, dxn + s.in_channels * HW, 0.0f);
        col2im(s, dcol, cols, i * PQ, dxn);
      }
    }
  });
  for (int t = 0; t < threads; ++t) {
    const std::vector<float>& part = dw_partial[static_cast<std::size_t>(t)];
    for (std::size_t i = 0; i < part.size(); ++i) dw[i] += part[i];
    if (db != nullptr)
      for (std::size_t k = 0; k < db_partial[static_cast<std::size_t>(t)].size(); ++k)
        db[k] += static_cast<float>(db_partial[static_cast<std::size_t>(t)][k]);
  }
}

}  // namespace kolo::models::cpu
