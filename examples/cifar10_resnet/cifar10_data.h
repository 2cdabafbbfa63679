// Where the cifar10_resnet example's images come from: CIFAR-10's binary batches in a
// folder (data_batch_1.bin ... data_batch_5.bin and test_batch.bin, as the
// cifar-10-binary.tar.gz archive unpacks them), or, when no folder is given, synthetic
// images of the same shape (3x32x32, 10 classes) so that the example runs anywhere.
#pragma once

#include <cstdint>
#include <string>

#include "kolo/models.h"

namespace kolo::examples {

struct CifarData {
  models::Dataset train, test;
  bool synthetic = false;
  std::string origin;  // for the header: the folder and its files, or what the synthetic data is
};

// CIFAR-10's sizes, which the synthetic data copies unless limits are given.
inline constexpr int64_t kCifarTrainImages = 50000, kCifarTestImages = 10000;

// folder empty: synthetic data, train_limit images (default 50,000) and test_limit (default
// a fifth of the training set, CIFAR-10's ratio), from seed. Otherwise the folder's files,
// cut to the limits (0: all). Throws kolo::Error naming the folder or file and saying what
// was expected there.
CifarData load_cifar10_or_synthetic(const std::string& folder, int64_t train_limit, int64_t test_limit,
                                    uint64_t seed);

// CIFAR-10's per-channel mean and standard deviation (of the training set, pixels in [0, 1]).
const std::vector<float>& cifar10_mean();
const std::vector<float>& cifar10_stddev();

}  // namespace kolo::examples
