// The checks the layers share on what a caller hands them: hyper-parameters that describe
// no window, and a backward() that has nothing, or the wrong gradient, to work on. The
// kernels trust their shapes; a wrong one would be read or written past its end.
#pragma once

#include <string>
#include <vector>

#include "kolo/models.h"

namespace kolo::models {

// A kernel window (convolution or pooling) that fits the padded input of (height, width):
// kernel and stride at least 1, padding from 0 to `most_padding`.
void check_window(const std::string& layer, int64_t kernel, int64_t stride, int64_t padding, int64_t most_padding);
void check_window_fits(const std::string& layer, const std::vector<int64_t>& input_shape, int64_t kernel,
                       int64_t padding);

// backward() after a training-mode forward() (`saved`: it kept a tensor of at least one
// dimension, perhaps of no elements), with a gradient of the shape that
// forward() returned.
void check_backward(const std::string& layer, bool saved, const Tensor& grad_output,
                    const std::vector<int64_t>& output_shape);

}  // namespace kolo::models
