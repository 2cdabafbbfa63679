#include "models/layers/layer_checks.h"

namespace kolo::models {

void check_window(const std::string& layer, int64_t kernel, int64_t stride, int64_t padding, int64_t most_padding) {
  if (kernel < 1 || stride < 1 || padding < 0 || padding > most_padding)
    throw Error(StatusCode::InvalidArgument,
                "kolo: " + layer + ": kernel " + std::to_string(kernel) + ", stride " + std::to_string(stride) +
                    ", padding " + std::to_string(padding) +
                    ": expected kernel >= 1, stride >= 1 and padding from 0 to " + std::to_string(most_padding));
}

void check_window_fits(const std::string& layer, const std::vector<int64_t>& input_shape, int64_t kernel,
                       int64_t padding) {
  // (H + 2p - k) / stride + 1 rounds toward zero: a window larger than the padded input
  // would still count one output.
  for (std::size_t d = input_shape.size() - 2; d < input_shape.size(); ++d)
    if (input_shape[d] + 2 * padding < kernel)
      throw Error(StatusCode::InvalidArgument, "kolo: " + layer + ": input " + shape_string(input_shape) +
                                                   " with padding " + std::to_string(padding) +
                                                   " is smaller than the kernel (" + std::to_string(kernel) + ")");
}

void check_backward(const std::string& layer, bool saved, const Tensor& grad_output,
                    const std::vector<int64_t>& output_shape) {
  if (!saved)
    throw Error(StatusCode::InvalidArgument,
                "kolo: " + layer + ": backward() without a forward() in training mode since the last backward() "
                                   "(in eval mode a layer keeps nothing for backward)");
  if (grad_output.shape() != output_shape)
    throw Error(StatusCode::InvalidArgument, "kolo: " + layer + ": the output gradient " +
                                                 shape_string(grad_output.shape()) + " does not match the output " +
                                                 shape_string(output_shape));
}

}  // namespace kolo::models
