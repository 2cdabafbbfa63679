// A direct 2-D convolution in double, forward and all three gradients: the reference the
// CPU's convolution paths (cpu_convolution_test.cc) and every Kernels implementation
// (kernels_conformance_layers_test.cc) are held to.
#pragma once

#include <vector>

#include "kolo/models.h"
#include "models/kernels.h"

namespace kolo::models::reference {

struct Convolution {
  std::vector<double> y, dx, dw, db;
};

// y = conv(x, w) + b (b may be null), and for the output gradient dy: dx, dw, db, all by
// direct loops.
inline Convolution convolution(const ConvShape& s, const Tensor& x, const Tensor& w, const float* b, const Tensor& dy) {
  const int64_t N = s.batch, C = s.in_channels, H = s.height, W = s.width, K = s.out_channels, R = s.kernel;
  const int64_t P = s.out_height(), Q = s.out_width();
  Convolution r{std::vector<double>(static_cast<std::size_t>(N * K * P * Q)),
                std::vector<double>(static_cast<std::size_t>(x.numel())),
                std::vector<double>(static_cast<std::size_t>(w.numel())), std::vector<double>(static_cast<std::size_t>(K))};
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t p = 0; p < P; ++p)
        for (int64_t q = 0; q < Q; ++q) {
          const int64_t out = ((n * K + k) * P + p) * Q + q;
          double sum = b != nullptr ? double(b[k]) : 0.0;
          const double g = dy[out];
          r.db[static_cast<std::size_t>(k)] += g;
          for (int64_t c = 0; c < C; ++c)
            for (int64_t i = 0; i < R; ++i)
              for (int64_t j = 0; j < R; ++j) {
                const int64_t ih = p * s.stride - s.padding + i, iw = q * s.stride - s.padding + j;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                const int64_t xi = ((n * C + c) * H + ih) * W + iw, wi = ((k * C + c) * R + i) * R + j;
                sum += double(w[wi]) * double(x[xi]);
                r.dx[static_cast<std::size_t>(xi)] += double(w[wi]) * g;
                r.dw[static_cast<std::size_t>(wi)] += double(x[xi]) * g;
              }
          r.y[static_cast<std::size_t>(out)] = sum;
        }
  return r;
}

}  // namespace kolo::models::reference
