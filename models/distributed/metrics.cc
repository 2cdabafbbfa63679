// average_metric: hvd.allreduce of a metric, for logging the same loss or accuracy on
// every rank.
#include "kolo/models.h"
#include "models/distributed/handles.h"

namespace kolo::models {

double average_metric(double value, const std::string& name) {
  distributed_detail::require_initialized("average_metric");
  std::vector<double> v{value};
  allreduce("metric/" + name, view(v), {ReduceOp::Average});
  return v[0];
}

}  // namespace kolo::models
