// sim/calibration.cc: ordinary least squares in two unknowns, through the 2×2 normal
// equations. Samples are weighted by 1/seconds, so that a 4 KiB call's microseconds count
// as much as a 256 MiB call's: α lives in the small ones, β in the large.
#include "sim/calibration.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace kolo::sim {

Fit fit_link(Collective collective, const std::vector<Sample>& samples) {
  // Rows (x1, x2) = (steps, byte_factor·bytes) / seconds; target 1 (relative error).
  double s11 = 0, s12 = 0, s22 = 0, t1 = 0, t2 = 0;
  for (const Sample& s : samples) {
    if (s.seconds <= 0 || s.bytes < 0) throw std::invalid_argument("fit_link: a sample needs seconds > 0 and bytes >= 0");
    const CostShape shape = cost_shape(collective, s.ranks);
    const double x1 = shape.steps / s.seconds, x2 = shape.byte_factor * s.bytes / s.seconds;
    s11 += x1 * x1, s12 += x1 * x2, s22 += x2 * x2, t1 += x1, t2 += x2;
  }
  const double determinant = s11 * s22 - s12 * s12;
  if (!(determinant > 1e-12 * s11 * s22))
    throw std::invalid_argument("fit_link: the samples cannot separate alpha from beta (vary the size or the ranks)");
  Fit fit;
  fit.link.alpha = (t1 * s22 - t2 * s12) / determinant;
  fit.link.beta = (t2 * s11 - t1 * s12) / determinant;
  double squares = 0;
  for (const Sample& s : samples) {
    const double error = cost(collective, s.ranks, s.bytes, fit.link) - s.seconds;
    squares += error * error;
    fit.max_relative_error = std::max(fit.max_relative_error, std::abs(error) / s.seconds);
  }
  fit.rms_residual_s = std::sqrt(squares / samples.size());
  return fit;
}

}  // namespace kolo::sim
