// Accuracy over a whole data set, split across the ranks: rank r classifies samples
// r, r + size, ... and one allreduce adds up the counts. The sampler's padding (the
// repeated samples that even out the ranks' shares) is not counted, so the result is
// exact, whatever the number of ranks.
#pragma once

#include <cstdint>

#include "kolo/models.h"

namespace kolo::examples {

class Evaluator {
 public:
  // options: batch size and normalisation; the data set must outlive the evaluator.
  Evaluator(const models::Dataset& data, const models::LoaderOptions& options);
  // Puts the net in eval mode for the pass and back in training mode after it.
  double accuracy(models::Net& net);
  int64_t samples() const { return sampler_.dataset_size(); }

 private:
  models::DistributedSampler sampler_;
  models::DataLoader loader_;
  int64_t mine_;  // this rank's real samples; the sampler's padding comes after them
};

// Rows of (N, classes) logits among the first `rows` whose first maximum is at the label.
int64_t count_correct(const models::Tensor& logits, const std::vector<int32_t>& labels, int64_t rows);

}  // namespace kolo::examples
