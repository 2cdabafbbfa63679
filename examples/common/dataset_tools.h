// Small operations on a loaded data set that the examples' flags ask for.
#pragma once

#include <cstdint>

#include "kolo/models.h"

namespace kolo::examples {

// Keeps the first `count` samples (--train-limit and friends); 0 or more than there are:
// all of them.
void keep_first(models::Dataset& data, int64_t count);

struct MeanStd {
  float mean = 0, stddev = 1;
};
// Mean and standard deviation of every pixel value of the data set (all channels together),
// for normalising inputs by the training set's own statistics.
MeanStd pixel_mean_std(const models::Dataset& data);

}  // namespace kolo::examples
