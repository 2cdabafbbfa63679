#include "common/distributed_stopgap.h"

namespace kolo::examples::stopgap {

DistributedOptimizer::DistributedOptimizer(models::Optimizer& optimizer, models::Module& net)
    : optimizer_(optimizer), params_(net.parameters()) {}

bool DistributedOptimizer::step() {
  std::vector<kolo::Handle> handles;
  for (models::Parameter* p : params_) handles.push_back(kolo::allreduce_async("grad/" + p->name, p->grad.view()));
  for (kolo::Handle& h : handles) h.wait().throw_if_error();
  optimizer_.step();
  return true;
}

double scaled_lr(double base_lr) { return base_lr * kolo::size(); }

std::unique_ptr<models::LrSchedule> size_warmup(double warmup_epochs) {
  return models::linear_warmup(warmup_epochs, 1.0 / kolo::size());
}

double average_metric(double value, const std::string& name) {
  std::vector<double> v{value};
  kolo::allreduce(name, kolo::view(v));
  return v[0];
}

bool is_root() { return kolo::rank() == 0; }

void share_restored_state(const std::string& path, models::Module& net, models::Optimizer& optimizer) {
  if (kolo::rank() != 0) models::restore(models::load_checkpoint(path), net, &optimizer);
}

}  // namespace kolo::examples::stopgap
