// Row-major Eigen maps over raw float buffers: the only way the CPU kernels use Eigen.
#pragma once

#include <Eigen/Core>

namespace kolo::models::cpu {

using RowMajorMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatrixMap = Eigen::Map<RowMajorMatrix>;
using ConstMatrixMap = Eigen::Map<const RowMajorMatrix>;

}  // namespace kolo::models::cpu
