// Building one batch for the DataLoader: gather samples by index, augment each with its
// own random stream, stack them into a Batch. Private to models/data/.
#pragma once

#include <atomic>

#include "kolo/models.h"

namespace kolo::models::data {

// Throws kolo::Error(InvalidArgument) on options that cannot work with this dataset and sampler.
void check_loader_setup(const Dataset& dataset, const DistributedSampler& sampler, const LoaderOptions& options);

// Images after augmentation: the dataset's size, or resize_to × resize_to.
std::vector<int64_t> image_shape(const Dataset& dataset, const LoaderOptions& options);

// Fills `batch` (reusing its buffers) with the samples `indices[0, count)` of `epoch`.
// Returns false, leaving the batch partly filled, as soon as `cancel` is set.
bool build_batch(const Dataset& dataset, const LoaderOptions& options, int64_t epoch, const int64_t* indices,
                 int64_t count, const std::atomic<bool>& cancel, Batch& batch);

}  // namespace kolo::models::data
