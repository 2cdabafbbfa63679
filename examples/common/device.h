// Where a training run computes: --device auto (a GPU when one is visible, else the CPU),
// cpu, cuda or cuda:N; and moving batches there.
#pragma once

#include <string>

#include "common/training_flags.h"
#include "kolo/models.h"

namespace kolo::examples {

// auto: this rank's GPU (local rank modulo the visible devices) if there is one, else the
// CPU. cuda without an index picks the same GPU. Throws kolo::Error naming the flag when
// the device does not exist.
Device training_device(const std::string& flag);

// The device the net's parameters are on.
Device device_of(models::Net& net);

// A batch's images as a tensor on `device`.
models::Tensor images_on(const models::Batch& batch, Device device);

}  // namespace kolo::examples
