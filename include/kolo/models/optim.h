// Optimizers with PyTorch's exact update rules, learning-rate schedules, and their state
// (saved in checkpoints). Part of kolo/models.h.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kolo::models {

struct Parameter;
class Tensor;

// Named tensors and scalars an optimizer needs to resume exactly where it stopped.
// Tensors are "<kind>/<parameter name>": "momentum/…" (SGD), "exp_avg/…" and
// "exp_avg_sq/…" (Adam), "square_avg/…" and "acc_delta/…" (Adadelta), absent before the
// first step as in PyTorch. Scalars: "lr" (the current rate), and "step" for Adam.
struct OptimizerState {
  std::map<std::string, std::vector<float>> tensors;  // e.g. "momentum/conv1.weight"
  std::map<std::string, double> scalars;              // e.g. "step", "lr"
};

class Optimizer {
 public:
  explicit Optimizer(std::vector<Parameter*> params);  // none of them null
  virtual ~Optimizer() = default;

  // Applies one update from each parameter's grad (torch.optim's step()).
  virtual void step() = 0;
  void zero_grad();

  double lr() const { return lr_; }
  // A finite rate of 0 or more; throws kolo::Error (InvalidArgument) otherwise.
  void set_lr(double lr);
  const std::vector<Parameter*>& parameters() const { return params_; }

  // State is keyed by parameter name: both throw kolo::Error if two parameters share one.
  virtual OptimizerState state() const = 0;
  // Restores the buffers, the step count and lr. Throws kolo::Error naming the tensor if the
  // state does not fit these parameters (missing, extra, or a different size), and then
  // changes nothing.
  virtual void load_state(const OptimizerState& state) = 0;
  virtual std::string name() const = 0;

  // ---- For a wrapper that splits the update among processes sharing one copy of the
  // parameters (DistributedOptimizer's node_shared_update) --------------------------------
  // Whether step() honours set_update_range and set_before_update (it runs its update
  // through for_each_update_block) and state_buffers() lists all the state.
  virtual bool can_update_a_range() const { return false; }
  // step() then updates only elements [begin, end) of the parameters taken end to end in
  // parameters() order (every element by default); the update is element-wise, so the
  // elements it does update come out as a full step would leave them.
  void set_update_range(int64_t begin, int64_t end);
  // The per-parameter state, one vector per kind (SGD: momentum; Adam: exp_avg and
  // exp_avg_sq), each empty before the first step, then parallel to parameters(). The
  // wrapper may point these tensors at shared memory; load_state replaces them.
  virtual std::vector<std::vector<Tensor>*> state_buffers() { return {}; }
  // step() then updates the range in blocks of 16 Ki elements per thread (num_threads()),
  // calling hook(begin, end) on each block just before it updates it (same indexing), so
  // that the wrapper can make a block's gradients while they stay in cache for the update.
  // An empty hook: one pass, as by default. The wrapper owns the range and the hook while
  // it wraps the optimizer.
  using BeforeUpdate = std::function<void(int64_t begin, int64_t end)>;
  void set_before_update(BeforeUpdate hook) { before_update_ = std::move(hook); }

 protected:
  // What each step() runs its kernel through: update(begin, end) over the update range,
  // clipped to the parameters; once, or block by block after the before-update hook.
  void for_each_update_block(const std::function<void(int64_t begin, int64_t end)>& update);

  std::vector<Parameter*> params_;
  double lr_ = 0;
  int64_t update_begin_ = 0, update_end_ = INT64_MAX;  // set_update_range's
  BeforeUpdate before_update_;
};

struct SgdOptions {
  double lr = 0.01, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false;
};
class SGD : public Optimizer {
 public:
  SGD(std::vector<Parameter*> params, const SgdOptions& options);
  void step() override;
  OptimizerState state() const override;
  void load_state(const OptimizerState& state) override;
  std::string name() const override { return "sgd"; }
  bool can_update_a_range() const override { return true; }
  std::vector<std::vector<Tensor>*> state_buffers() override;  // none without momentum

 private:
  SgdOptions options_;
  std::vector<Tensor> momentum_;  // on the parameters' device; empty until the first step, as in PyTorch
};

struct AdamOptions {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
};
class Adam : public Optimizer {
 public:
  Adam(std::vector<Parameter*> params, const AdamOptions& options);
  void step() override;
  OptimizerState state() const override;
  void load_state(const OptimizerState& state) override;
  std::string name() const override { return "adam"; }
  bool can_update_a_range() const override { return true; }
  std::vector<std::vector<Tensor>*> state_buffers() override { return {&m_, &v_}; }

 private:
  AdamOptions options_;
  int64_t steps_ = 0;
  std::vector<Tensor> m_, v_;  // on the parameters' device
};

struct AdadeltaOptions {
  double lr = 1.0, rho = 0.9, eps = 1e-6, weight_decay = 0;
};
class Adadelta : public Optimizer {
 public:
  Adadelta(std::vector<Parameter*> params, const AdadeltaOptions& options);
  void step() override;
  OptimizerState state() const override;
  void load_state(const OptimizerState& state) override;
  std::string name() const override { return "adadelta"; }
  bool can_update_a_range() const override { return true; }
  std::vector<std::vector<Tensor>*> state_buffers() override { return {&square_avg_, &acc_delta_}; }

 private:
  AdadeltaOptions options_;
  std::vector<Tensor> square_avg_, acc_delta_;  // on the parameters' device
};

// ---- Learning-rate schedules ------------------------------------------------------------
// A schedule maps progress (in epochs, fractional: epoch + batch / batches_per_epoch) to a
// multiplier of the base learning rate; schedules compose by multiplication.
class LrSchedule {
 public:
  virtual ~LrSchedule() = default;
  virtual double factor(double epoch) const = 0;
};

// × gamma every step_epochs (torch.optim.lr_scheduler.StepLR).
std::unique_ptr<LrSchedule> step_schedule(double step_epochs, double gamma);
// Cosine from 1 to min_factor over total_epochs (CosineAnnealingLR with eta_min = min_factor·lr),
// then held at min_factor (CosineAnnealingLR would rise again).
std::unique_ptr<LrSchedule> cosine_schedule(double total_epochs, double min_factor = 0);
// Linear from start_factor to 1 over warmup_epochs, then 1 (Goyal et al. warmup uses
// start_factor = 1/size when the base lr is already scaled by size).
std::unique_ptr<LrSchedule> linear_warmup(double warmup_epochs, double start_factor);
// The product of several schedules.
std::unique_ptr<LrSchedule> compose(std::vector<std::unique_ptr<LrSchedule>> schedules);

}  // namespace kolo::models
