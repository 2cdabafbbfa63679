// Learning-rate schedules: multipliers of the base learning rate as a function of
// (fractional) epochs, so that a schedule can change the rate within an epoch (warmup).
#include <cmath>
#include <numbers>

#include "kolo/models.h"

namespace kolo::models {
namespace {

[[noreturn]] void invalid(const std::string& what) {
  throw Error(StatusCode::InvalidArgument, "kolo: learning-rate schedule: " + what);
}

class StepSchedule : public LrSchedule {
 public:
  StepSchedule(double step_epochs, double gamma) : step_epochs_(step_epochs), gamma_(gamma) {}
  double factor(double epoch) const override {
    if (epoch <= 0) return 1;
    return std::pow(gamma_, std::floor(epoch / step_epochs_));
  }

 private:
  double step_epochs_, gamma_;
};

class CosineSchedule : public LrSchedule {
 public:
  CosineSchedule(double total_epochs, double min_factor) : total_(total_epochs), min_(min_factor) {}
  double factor(double epoch) const override {
    // Held at the ends: PyTorch's CosineAnnealingLR would climb back up after total_epochs,
    // which no training run wants.
    if (epoch <= 0) return 1;
    if (epoch >= total_) return min_;
    return min_ + (1 - min_) * (1 + std::cos(std::numbers::pi * epoch / total_)) / 2;
  }

 private:
  double total_, min_;
};

class LinearWarmup : public LrSchedule {
 public:
  LinearWarmup(double warmup_epochs, double start_factor) : warmup_(warmup_epochs), start_(start_factor) {}
  double factor(double epoch) const override {
    if (epoch >= warmup_) return 1;
    if (epoch <= 0) return start_;
    return start_ + (1 - start_) * epoch / warmup_;
  }

 private:
  double warmup_, start_;
};

class Product : public LrSchedule {
 public:
  explicit Product(std::vector<std::unique_ptr<LrSchedule>> parts) : parts_(std::move(parts)) {}
  double factor(double epoch) const override {
    double f = 1;
    for (const auto& part : parts_) f *= part->factor(epoch);
    return f;
  }

 private:
  std::vector<std::unique_ptr<LrSchedule>> parts_;
};

}  // namespace

std::unique_ptr<LrSchedule> step_schedule(double step_epochs, double gamma) {
  if (!(step_epochs > 0)) invalid("step_epochs must be positive, got " + std::to_string(step_epochs));
  if (!(gamma >= 0)) invalid("gamma must not be negative, got " + std::to_string(gamma));
  return std::make_unique<StepSchedule>(step_epochs, gamma);
}

std::unique_ptr<LrSchedule> cosine_schedule(double total_epochs, double min_factor) {
  if (!(total_epochs > 0)) invalid("total_epochs must be positive, got " + std::to_string(total_epochs));
  if (!(min_factor >= 0)) invalid("min_factor must not be negative, got " + std::to_string(min_factor));
  return std::make_unique<CosineSchedule>(total_epochs, min_factor);
}

std::unique_ptr<LrSchedule> linear_warmup(double warmup_epochs, double start_factor) {
  if (!(warmup_epochs >= 0)) invalid("warmup_epochs must not be negative, got " + std::to_string(warmup_epochs));
  if (!(start_factor >= 0)) invalid("start_factor must not be negative, got " + std::to_string(start_factor));
  return std::make_unique<LinearWarmup>(warmup_epochs, start_factor);
}

std::unique_ptr<LrSchedule> compose(std::vector<std::unique_ptr<LrSchedule>> schedules) {
  for (const auto& s : schedules)
    if (!s) invalid("compose() was given a null schedule");
  return std::make_unique<Product>(std::move(schedules));
}

}  // namespace kolo::models
