// Batch norm's per-channel passes, one channel per task: statistics are accumulated in
// double so that large batches lose nothing to float summation.
#include "cpu_kernels.h"
#include "thread_pool.h"

namespace kolo::models::cpu {

void CpuKernels::channel_sums(int64_t n, int64_t c, int64_t hw, const float* x, double* sum) {
  parallel_for(c, [&](int64_t begin, int64_t end, int) {
    for (int64_t ch = begin; ch < end; ++ch) {
      double s = 0;
      for (int64_t i = 0; i < n; ++i) {
        const float* p = x + (i * c + ch) * hw;
        for (int64_t j = 0; j < hw; ++j) s += p[j];
      }
      sum[ch] = s;
    }
  });
}

void CpuKernels::channel_centered_squares(int64_t n, int64_t c, int64_t hw, const float* x,
                                          const double* mean, double* squares) {
  parallel_for(c, [&](int64_t begin, int64_t end, int) {
    for (int64_t ch = begin; ch < end; ++ch) {
      double sq = 0;
      const double m = mean[ch];
      for (int64_t i = 0; i < n; ++i) {
        const float* p = x + (i * c + ch) * hw;
        for (int64_t j = 0; j < hw; ++j) {
          const double d = double(p[j]) - m;
          sq += d * d;
        }
      }
      squares[ch] = sq;
    }
  });
}

void CpuKernels::batchnorm_apply(int64_t n, int64_t c, int64_t hw, const float* x, const float* mean,
                                 const float* inv_std, const float* gamma, const float* beta,
                                 float* y) {
  parallel_for(c, [&](int64_t begin, int64_t end, int) {
    for (int64_t ch = begin; ch < end; ++ch) {
      const float scale = inv_std[ch] * gamma[ch];
      const float shift = beta[ch] - mean[ch] * scale;
      for (int64_t i = 0; i < n; ++i) {
        const float* p = x + (i * c + ch) * hw;
        float* q = y + (i * c + ch) * hw;
        for (int64_t j = 0; j < hw; ++j) q[j] = p[j] * scale + shift;
      }
    }
  });
}

void CpuKernels::batchnorm_grad_sums(int64_t n, int64_t c, int64_t hw, const float* x,
                                     const float* dy, const float* mean, const float* inv_std,
                                     double* sum_dy, double* sum_dy_xhat) {
  parallel_for(c, [&](int64_t begin, int64_t end, int) {
    for (int64_t ch = begin; ch < end; ++ch) {
      double s = 0, sx = 0;
      const double m = mean[ch];
      for (int64_t i = 0; i < n; ++i) {
        const float* p = x + (i * c + ch) * hw;
        const float* g = dy + (i * c + ch) * hw;
        for (int64_t j = 0; j < hw; ++j) {
          s += g[j];
          sx += double(g[j]) * (double(p[j]) - m);
        }
      }
      sum_dy[ch] = s;
      sum_dy_xhat[ch] = sx * inv_std[ch];
    }
  });
}

void CpuKernels::batchnorm_backward_input(int64_t n, int64_t c, int64_t hw, const float* x,
                                          const float* dy, const float* mean, const float* inv_std,
                                          const float* gamma, const double* sum_dy,
                                          const double* sum_dy_xhat, double count, float* dx) {
  parallel_for(c, [&](int64_t begin, int64_t end, int) {
    for (int64_t ch = begin; ch < end; ++ch) {
      const float istd = inv_std[ch];
      const float k = gamma[ch] * istd;
      const float mean_dy = static_cast<float>(sum_dy[ch] / count);
      // xhat·mean(dy·xhat) = (x - mean)·istd·mean(dy·xhat)
      const float slope = static_cast<float>(sum_dy_xhat[ch] / count) * istd;
      const float m = mean[ch];
      for (int64_t i = 0; i < n; ++i) {
        const float* p = x + (i * c + ch) * hw;
        const float* g = dy + (i * c + ch) * hw;
        float* d = dx + (i * c + ch) * hw;
        for (int64_t j = 0; j < hw; ++j) d[j] = k * (g[j] - mean_dy - (p[j] - m) * slope);
      }
    }
  });
}

}  // namespace kolo::models::cpu
