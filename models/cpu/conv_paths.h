// The CPU's two ways to convolve (conv_dispatch.cc picks one per call): im2col + Eigen
// GEMM (conv_im2col.cc), and oneDNN's direct kernels (conv_onednn.cc, in builds
// with oneDNN). Arguments and results as Kernels::conv2d_forward / conv2d_backward.
#pragma once

#include "models/kernels.h"

namespace kolo::models::cpu {

void im2col_conv_forward(const ConvShape& s, const float* x, const float* w, const float* b, float* y);
void im2col_conv_backward(const ConvShape& s, const float* x, const float* w, const float* dy, float* dx, float* dw,
                          float* db);
// True where im2col leaves out kernel taps that only ever read padding (see gemm_taps):
// a 3×3 convolution on 1×1 maps does a ninth of the arithmetic that way.
bool im2col_skips_dead_taps(const ConvShape& s);

// oneDNN (only in builds with KOLO_WITH_ONEDNN).
bool onednn_has_fast_kernel(const ConvShape& s);  // false where it has only reference code
void onednn_conv_forward(const ConvShape& s, const float* x, const float* w, const float* b, float* y);
// With dw null, the input gradient alone (db is then ignored).
void onednn_conv_backward(const ConvShape& s, const float* x, const float* w, const float* dy, float* dx, float* dw,
                          float* db);

}  // namespace kolo::models::cpu
