// Learning-rate scaling with the number of ranks (Goyal et al., "Accurate, Large Minibatch
// SGD"): the global batch is size() times a rank's, so the rate grows with it, after a
// warmup that starts from the single-rank rate.
#include "kolo/models.h"
#include "models/distributed/handles.h"

namespace kolo::models {

double scaled_lr(double base_lr) {
  distributed_detail::require_initialized("scaled_lr");
  return base_lr * size();
}

std::unique_ptr<LrSchedule> size_warmup(double warmup_epochs) {
  distributed_detail::require_initialized("size_warmup");
  return linear_warmup(warmup_epochs, 1.0 / size());
}

}  // namespace kolo::models
