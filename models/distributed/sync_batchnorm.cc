// synchronize_batchnorm: hvd.SyncBatchNorm for kolo's BatchNorm2d. The layer already does
// its statistics as per-channel sums, one vector at a time, and hands each vector to its
// stats reducer; summing those vectors over ranks turns every rank's batch statistics
// into those of the global batch. The count travels with the sums, so a joined rank
// (which contributes zeros) is simply an empty batch.
#include <string>

#include "kolo/models.h"
#include "models/distributed/handles.h"

namespace kolo::models {
namespace {

// The layer calls its reducer with [Σx | count] (C + 1 values) and [Σ(x - mean)²] (C) in
// forward and [Σdy | Σdy·xhat] (2C) in backward. Each kind gets its own tensor name, so
// the runtime's response cache keeps one slot (one shape) per name.
BatchNorm2d::StatsReducer sum_over_ranks(const std::string& layer, std::size_t channels) {
  return [prefix = "syncbn/" + layer + "/", channels](std::vector<double>& stats) {
    const char* kind = stats.size() == channels + 1 ? "mean" : stats.size() == channels ? "var" : "grad";
    allreduce(prefix + kind, view(stats), {ReduceOp::Sum});
  };
}

}  // namespace

void synchronize_batchnorm(Module& net) {
  distributed_detail::require_initialized("synchronize_batchnorm");
  for (Module* m : net.modules()) {
    auto* bn = dynamic_cast<BatchNorm2d*>(m);
    if (!bn) continue;
    std::string layer = bn->weight().name;  // "layer1.0.bn1.weight" -> "layer1.0.bn1"
    const std::string suffix = ".weight";
    if (layer.ends_with(suffix)) layer.erase(layer.size() - suffix.size());
    bn->set_stats_reducer(sum_over_ranks(layer, static_cast<std::size_t>(bn->weight().value.numel())));
  }
}

}  // namespace kolo::models
