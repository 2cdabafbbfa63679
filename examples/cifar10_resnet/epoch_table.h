// The table the seeds report after a run: one row per epoch with its time, images/s, loss
// and accuracy, plus the mean time and images/s of the epochs after the first (which
// carries the start-up: first allocations, the loader's first batches).
#pragma once

#include <vector>

#include "common/format.h"

namespace kolo::examples {

// Prints on stdout; the caller prints on rank 0 only. synthetic: val_acc is left out (chance).
void print_epoch_table(const std::vector<EpochReport>& epochs, bool synthetic);

}  // namespace kolo::examples
