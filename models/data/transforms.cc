// Augmentation on one CHW float image: normalisation, horizontal flip, padded crop and
// bilinear resize. The resize reproduces torch.nn.functional.interpolate(mode="bilinear",
// align_corners=False): the same weights and order of operations, so results agree with
// PyTorch 1.13 to within an ulp (where FMA contraction differs; checked bit for bit on
// CIFAR-10's 32 -> 128 upscale in a -march=native build).
#include <algorithm>
#include <cstring>

#include "kolo/models.h"

namespace kolo::models {
namespace {

[[noreturn]] void invalid(const std::string& message) {
  throw Error(StatusCode::InvalidArgument, "kolo: " + message);
}

// For one output axis: the two source indices and their weights for every output position.
struct AxisTaps {
  std::vector<int64_t> i0, i1;
  std::vector<float> w0, w1;
};

// As PyTorch 1.13's CPU kernel (compute_source_index_and_lambda): the scale in float, the
// source coordinate (dst + 0.5) * scale - 0.5 in double (its accumulate type), clamped at 0
// so the first half pixel repeats the edge; the second tap clamped at the last pixel.
// Matching those precisions gives PyTorch's weights exactly.
AxisTaps axis_taps(int64_t in, int64_t out) {
  AxisTaps taps;
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  for (int64_t dst = 0; dst < out; ++dst) {
    int64_t i0 = dst;
    float lambda = 0.0f;
    if (in != out) {
      const double src = std::max(double{scale} * (static_cast<double>(dst) + 0.5) - 0.5, 0.0);
      i0 = std::min(static_cast<int64_t>(src), in - 1);
      lambda = static_cast<float>(src - static_cast<double>(i0));
    }
    taps.i0.push_back(i0);
    taps.i1.push_back(i0 < in - 1 ? i0 + 1 : i0);
    taps.w0.push_back(1.0f - lambda);
    taps.w1.push_back(lambda);
  }
  return taps;
}

}  // namespace

void normalize(float* image, int64_t channels, int64_t hw, const std::vector<float>& mean,
               const std::vector<float>& stddev) {
  auto per_channel = [&](const std::vector<float>& v) {
    return v.size() == 1 || static_cast<int64_t>(v.size()) == channels;
  };
  if (!per_channel(mean) || !per_channel(stddev)) {
    invalid("normalize: " + std::to_string(mean.size()) + " means and " + std::to_string(stddev.size()) +
            " standard deviations for " + std::to_string(channels) + " channels (give 1 or one per channel)");
  }
  for (int64_t c = 0; c < channels; ++c) {
    const float m = mean[mean.size() == 1 ? 0 : c];
    const float s = stddev[stddev.size() == 1 ? 0 : c];
    if (!(s != 0.0f)) invalid("normalize: standard deviation of channel " + std::to_string(c) + " is " + std::to_string(s));
    float* plane = image + c * hw;
    // Divide (not multiply by 1/s) to round as torchvision's Normalize does.
    for (int64_t i = 0; i < hw; ++i) plane[i] = (plane[i] - m) / s;
  }
}

void horizontal_flip(float* image, int64_t channels, int64_t height, int64_t width) {
  for (int64_t row = 0; row < channels * height; ++row) std::reverse(image + row * width, image + (row + 1) * width);
}

void padded_crop(const float* image, int64_t channels, int64_t height, int64_t width, int64_t padding,
                 int64_t top, int64_t left, float* out) {
  if (padding < 0 || top < 0 || left < 0 || top > 2 * padding || left > 2 * padding) {
    invalid("padded_crop: crop at (" + std::to_string(top) + ", " + std::to_string(left) + ") with padding " +
            std::to_string(padding) + " (needs 0 <= top, left <= 2 * padding)");
  }
  // Output (y, x) reads input (y + dy, x + dx); outside the input it is padding (0).
  const int64_t dy = top - padding, dx = left - padding;
  const int64_t x_begin = std::clamp<int64_t>(-dx, 0, width), x_end = std::clamp<int64_t>(width - dx, 0, width);
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t y = 0; y < height; ++y) {
      float* dst = out + (c * height + y) * width;
      const int64_t sy = y + dy;
      if (sy < 0 || sy >= height || x_begin >= x_end) {
        std::fill(dst, dst + width, 0.0f);
        continue;
      }
      const float* src = image + (c * height + sy) * width;
      std::fill(dst, dst + x_begin, 0.0f);
      std::memcpy(dst + x_begin, src + x_begin + dx, static_cast<std::size_t>(x_end - x_begin) * sizeof(float));
      std::fill(dst + x_end, dst + width, 0.0f);
    }
  }
}

void resize_bilinear(const float* image, int64_t channels, int64_t height, int64_t width, int64_t out_height,
                     int64_t out_width, float* out) {
  if (channels < 1 || height < 1 || width < 1 || out_height < 1 || out_width < 1) {
    invalid("resize_bilinear: cannot resize " + shape_string({channels, height, width}) + " to " +
            std::to_string(out_height) + "x" + std::to_string(out_width));
  }
  const AxisTaps ys = axis_taps(height, out_height), xs = axis_taps(width, out_width);
  for (int64_t c = 0; c < channels; ++c) {
    const float* plane = image + c * height * width;
    for (int64_t oy = 0; oy < out_height; ++oy) {
      const float* row0 = plane + ys.i0[oy] * width;
      const float* row1 = plane + ys.i1[oy] * width;
      float* dst = out + (c * out_height + oy) * out_width;
      for (int64_t ox = 0; ox < out_width; ++ox) {
        // PyTorch's order: interpolate along x in each source row, then between the rows.
        const int64_t x0 = xs.i0[ox], x1 = xs.i1[ox];
        const float top = row0[x0] * xs.w0[ox] + row0[x1] * xs.w1[ox];
        const float bottom = row1[x0] * xs.w0[ox] + row1[x1] * xs.w1[ox];
        dst[ox] = top * ys.w0[oy] + bottom * ys.w1[oy];
      }
    }
  }
}

}  // namespace kolo::models
