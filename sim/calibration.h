// sim/calibration.h: fits a link's α and β to measured collective times, by least squares
// on time = α·steps + β·bytes·byte_factor with the collective's shape on p ranks
// (collective_cost.h). `kolo-sim calibrate` will feed it this machine's measurements.
#pragma once

#include <vector>

#include "sim/collective_cost.h"

namespace kolo::sim {

struct Sample {
  double bytes = 0;
  int ranks = 1;
  double seconds = 0;
};

struct Fit {
  LinkCost link;
  double rms_residual_s = 0;       // sqrt(mean((predicted − measured)²))
  double max_relative_error = 0;   // max |predicted − measured| / measured
};

// Needs samples whose shapes are not all proportional (two message sizes, or two rank
// counts): otherwise α and β cannot be told apart, and this throws std::invalid_argument.
Fit fit_link(Collective collective, const std::vector<Sample>& samples);

}  // namespace kolo::sim
