// Linear layers as Eigen GEMMs over PyTorch's (out × in) weight layout.
#include "cpu_kernels.h"
#include "eigen.h"
#include "thread_pool.h"

namespace kolo::models::cpu {

void CpuKernels::linear_forward(int64_t rows, int64_t in, int64_t out, const float* x,
                                const float* w, const float* b, float* y) {
  parallel_for(rows, [&](int64_t begin, int64_t end, int) {
    MatrixMap ys(y + begin * out, end - begin, out);
    ys.noalias() = ConstMatrixMap(x + begin * in, end - begin, in) * ConstMatrixMap(w, out, in).transpose();
    if (b != nullptr) ys.rowwise() += Eigen::Map<const Eigen::RowVectorXf>(b, out);
  });
}

void CpuKernels::linear_backward(int64_t rows, int64_t in, int64_t out, const float* x,
                                 const float* w, const float* dy, float* dx, float* dw, float* db) {
  const ConstMatrixMap dys(dy, rows, out);
  MatrixMap(dw, out, in).noalias() += dys.transpose() * ConstMatrixMap(x, rows, in);
  if (db != nullptr) Eigen::Map<Eigen::RowVectorXf>(db, out) += dys.colwise().sum();
  if (dx != nullptr) MatrixMap(dx, rows, in).noalias() = dys * ConstMatrixMap(w, out, in);
}

}  // namespace kolo::models::cpu
