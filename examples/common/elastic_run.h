// The examples' training run as an elastic job (--elastic, under kolorun with --min-np,
// --max-np or --host-discovery-script: docs/elastic.md), on kolo/elastic.h.
//
// The state is the net, the optimizer and the epoch, committed after each epoch: a lost
// worker costs the epoch under way, which the workers left train again from the last
// commit; new workers join at an epoch's end. After each reset the loader, the evaluator
// and the trainer are made again, for the new ranks (their shares, and the learning rate
// scaled by the new number of ranks).
#pragma once

#include <functional>
#include <memory>

#include "common/training_run.h"

namespace kolo::examples {

struct ElasticParts {
  std::function<std::unique_ptr<models::DataLoader>()> make_train;
  std::function<std::unique_ptr<Evaluator>()> make_test;
};

TrainingResult run_elastic_training(TrainingRun& run, const ElasticParts& parts);

}  // namespace kolo::examples
