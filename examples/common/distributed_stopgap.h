// TEMPORARY: the parts of include/kolo/models/distributed.h the examples use, in their
// simplest form, until its implementation (models/distributed/) lands. Same names and
// meanings, so switching is replacing `stopgap::` with `models::` and deleting this file.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kolo/models.h"

namespace kolo::examples::stopgap {

// Averages every gradient across ranks in step(), after backward (no overlap).
class DistributedOptimizer {
 public:
  DistributedOptimizer(models::Optimizer& optimizer, models::Module& net);
  bool step();
  void zero_grad() { optimizer_.zero_grad(); }
  models::Optimizer& optimizer() { return optimizer_; }
  double lr() const { return optimizer_.lr(); }
  void set_lr(double lr) { optimizer_.set_lr(lr); }

 private:
  models::Optimizer& optimizer_;
  std::vector<models::Parameter*> params_;
};

double scaled_lr(double base_lr);
std::unique_ptr<models::LrSchedule> size_warmup(double warmup_epochs);
double average_metric(double value, const std::string& name);
bool is_root();

// Stands for broadcast_parameters + broadcast_optimizer_state after rank 0 restored
// `path`: the other ranks read the same file (all ranks share this machine's disk).
void share_restored_state(const std::string& path, models::Module& net, models::Optimizer& optimizer);

}  // namespace kolo::examples::stopgap
