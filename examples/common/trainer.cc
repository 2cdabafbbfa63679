#include "common/trainer.h"

#include <chrono>

#include "common/device.h"

namespace kolo::examples {
namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

PhaseSeconds& PhaseSeconds::operator+=(const PhaseSeconds& other) {
  data += other.data;
  forward += other.forward;
  backward += other.backward;
  update += other.update;
  return *this;
}

Trainer::Trainer(models::Net& net, models::Optimizer& optimizer, double scaled_lr,
                 std::unique_ptr<models::LrSchedule> schedule, const models::DistributedOptions& options)
    : net_(net), optimizer_(optimizer, net, options), scaled_lr_(scaled_lr), schedule_(std::move(schedule)) {}

EpochStats Trainer::train_epoch(models::DataLoader& loader, int64_t epoch, ProgressBar& progress) {
  const int64_t batches = loader.batches_per_epoch();
  if (batches == 0) {
    throw kolo::Error(kolo::StatusCode::InvalidArgument,
                      "an epoch has no full batch: each rank's share of the training set is smaller than "
                      "--batch-size");
  }
  EpochStats stats;
  double loss_sum = 0, acc_sum = 0;
  int64_t images = 0;
  models::Batch batch;
  const Device device = device_of(net_);
  net_.train();
  loader.start_epoch(epoch);
  const Clock::time_point start = Clock::now();
  Clock::time_point mark = start;
  auto lap = [&mark](double& phase) {
    const Clock::time_point now = Clock::now();
    phase += std::chrono::duration<double>(now - mark).count();
    mark = now;
  };
  for (;;) {
    const bool more = loader.next(batch);
    lap(stats.phases.data);
    if (!more) break;
    stats.lr = scaled_lr_ * schedule_->factor(static_cast<double>(epoch) + static_cast<double>(stats.steps) / batches);
    optimizer_.set_lr(stats.lr);
    optimizer_.zero_grad();
    const models::Tensor logits = net_.forward(images_on(batch, device));
    const models::LossResult loss = models::softmax_cross_entropy(logits, batch.labels);
    loss_sum += loss.loss;
    acc_sum += models::accuracy(logits, batch.labels);
    lap(stats.phases.forward);
    net_.backward(loss.grad);
    lap(stats.phases.backward);
    optimizer_.step();
    lap(stats.phases.update);
    ++stats.steps;
    images += batch.shape[0];
    progress.update(stats.steps, loss_sum / stats.steps, acc_sum / stats.steps);
  }
  stats.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  // Every rank has the same number of full batches (the sampler pads, the loader drops the rest).
  stats.images = images * kolo::size();
  stats.loss = models::average_metric(loss_sum / stats.steps, "train_loss");
  stats.acc = models::average_metric(acc_sum / stats.steps, "train_acc");
  return stats;
}

}  // namespace kolo::examples
