// kolo::torch::DistributedOptimizer: horovod.torch's DistributedOptimizer in C++. A post
// hook on each parameter's gradient accumulator submits the gradient to kolo as soon as
// backward has accumulated it; synchronize() submits what backward did not produce and
// waits; step() steps the wrapped optimizer on the reduced gradients. With op Adasum on
// more than one rank, as horovod.torch's Adasum optimizer, step() steps each rank on its
// own gradients and combines the ranks' parameter changes instead (docs/distributed.md,
// "One contract").
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <cmath>
#include <map>
#include <mutex>
#include <unordered_map>

#include "tensors.h"

namespace kolo::torch {

namespace {

[[noreturn]] void invalid(const std::string& message) {
  throw Error(StatusCode::InvalidArgument, "kolo: DistributedOptimizer: " + message);
}

// The prefix of an optimizer's tensor names: "DistributedOptimizer" for the first one made
// on a process set, "DistributedOptimizer<k>" for the k-th after it. Two optimizers whose
// models share parameter names (a GAN's two halves) then never submit the same name, and
// ranks that make the set's optimizers in the same order agree on them.
std::string name_prefix(const ProcessSet& set) {
  static std::mutex mutex;
  static std::map<int, int> made;  // process set id -> optimizers made on it
  std::lock_guard lock(mutex);
  const int k = made[set.id()]++;
  return k == 0 ? "DistributedOptimizer" : "DistributedOptimizer" + std::to_string(k);
}

AllreduceOptions reduce_options(const DistributedOptimizerOptions& o) {
  if (o.backward_passes_per_step < 1) {
    invalid("backward_passes_per_step is " + std::to_string(o.backward_passes_per_step) + "; it must be at least 1");
  }
  if (o.op != ReduceOp::Average && o.op != ReduceOp::Sum && o.op != ReduceOp::Adasum) {
    invalid(std::string("op ") + op_name(o.op) + " does not combine gradients; use average, sum or adasum");
  }
  const double f = o.gradient_predivide_factor;
  if (!std::isfinite(f) || f <= 0) invalid("gradient_predivide_factor " + std::to_string(f) + " is not positive");
  if (f != 1.0 && o.op != ReduceOp::Average) {
    invalid(std::string("gradient_predivide_factor ") + std::to_string(f) + " needs op average, not " + op_name(o.op));
  }
  if (o.op == ReduceOp::Adasum && o.process_set.id() != 0 && kolo::size() > 1)
    invalid("op adasum combines updates over the global process set only (as Horovod's)");
  AllreduceOptions r;
  r.op = o.op;
  // Horovod's split of the average: 1/f before the sum, f/size after it (kolo's average
  // applies the 1/size itself).
  r.prescale = 1.0 / f;
  r.postscale = f;
  r.compression = o.compression;
  r.process_set = o.process_set;
  return r;
}

}  // namespace

struct DistributedOptimizer::Impl {
  // The hooks on slot i's gradient accumulator. They hold the optimizer weakly: once it is
  // gone they do nothing.
  struct BeforeAccumulation final : ::torch::autograd::FunctionPreHook {
    BeforeAccumulation(std::weak_ptr<Impl> o, std::size_t i) : optimizer(std::move(o)), slot(i) {}
    ::torch::autograd::variable_list operator()(const ::torch::autograd::variable_list& grads) override {
      if (auto live = optimizer.lock()) live->before_accumulation(slot);
      return grads;
    }
    std::weak_ptr<Impl> optimizer;
    std::size_t slot;
  };
  struct AfterAccumulation final : ::torch::autograd::FunctionPostHook {
    AfterAccumulation(std::weak_ptr<Impl> o, std::size_t i) : optimizer(std::move(o)), slot(i) {}
    ::torch::autograd::variable_list operator()(const ::torch::autograd::variable_list& outputs,
                                                const ::torch::autograd::variable_list&) override {
      if (auto live = optimizer.lock()) live->after_accumulation(slot);
      return outputs;
    }
    std::weak_ptr<Impl> optimizer;
    std::size_t slot;
  };

  // One parameter that requires grad.
  struct Slot {
    std::string name;  // kolo's name of its gradient
    at::Tensor param;
    int passes_left = 0;     // backward passes still to accumulate before the reduction
    bool touched = false;    // a backward pass reached it since the last synchronize()
    bool submitted = false;  // its gradient is in flight (handle)
    Handle handle;
  };

  Impl(::torch::optim::Optimizer& o, DistributedOptimizerOptions opts)
      : optimizer(o), options(std::move(opts)), reduce(reduce_options(options)) {}

  ::torch::optim::Optimizer& optimizer;
  const DistributedOptimizerOptions options;
  const AllreduceOptions reduce;
  std::vector<Slot> slots;
  // Each parameter's gradient accumulator and our hooks on it. A leaf holds its
  // accumulator only weakly: without these references every forward pass would make a
  // new one, without the hooks.
  struct Hooked {
    std::shared_ptr<::torch::autograd::Node> accumulator;
    ::torch::autograd::FunctionPreHook* before = nullptr;
    std::uintptr_t after = 0;  // the post hook's key
  };
  std::vector<Hooked> hooks;

  std::mutex mutex;  // guards slots' state: hooks run on autograd's threads
  bool synchronized = false;

  // Under the lock. An undefined gradient (backward never reached the parameter on this
  // rank) goes as zeros: the other ranks may have one.
  void submit(Slot& s) {
    at::Tensor& grad = s.param.mutable_grad();
    if (!grad.defined()) grad = at::zeros_like(s.param, at::MemoryFormat::Contiguous);
    s.handle = allreduce_async_(grad, s.name, reduce);
    s.submitted = true;
  }

  // Before slot i's accumulator adds a pass's gradient: a pass beyond
  // backward_passes_per_step is refused here, before it could write into a gradient that
  // kolo is reducing (Horovod notices only after the write).
  void before_accumulation(std::size_t i) {
    std::lock_guard lock(mutex);
    const Slot& s = slots[i];
    if (s.passes_left <= 0) {
      invalid("the gradient of '" + s.name + "' was computed more than backward_passes_per_step (" +
              std::to_string(options.backward_passes_per_step) +
              ") times before step() or synchronize(); raise backward_passes_per_step to accumulate more passes");
    }
  }

  // After: the pass's gradient is in param.grad().
  void after_accumulation(std::size_t i) {
    std::lock_guard lock(mutex);
    Slot& s = slots[i];
    s.touched = true;
    if (--s.passes_left == 0 && !combines_changes()) submit(s);
  }

  // Adasum over more than one rank combines parameter changes at step(), not gradients.
  bool combines_changes() const { return options.op == ReduceOp::Adasum && kolo::size() > 1; }

  void end_passes() {
    std::lock_guard lock(mutex);
    for (Slot& s : slots) {
      s.passes_left = options.backward_passes_per_step;
      s.touched = false;
    }
  }

  // Each rank steps on its own gradients (a parameter backward never reached, on zeros, as
  // horovod.torch); each parameter's change is combined across the ranks with Adasum and
  // added to where it started, also when the combination fails.
  void step_combining_changes() {
    end_passes();
    ::torch::NoGradGuard no_grad;
    std::vector<at::Tensor> starts;
    for (Slot& s : slots) {
      if (!s.param.grad().defined()) s.param.mutable_grad() = at::zeros_like(s.param, at::MemoryFormat::Contiguous);
      starts.push_back(s.param.detach().clone());
    }
    optimizer.step();
    std::vector<Handle> pending;
    std::exception_ptr error;
    for (std::size_t i = 0; i < slots.size(); ++i) {
      at::Tensor change = slots[i].param.detach().sub_(starts[i]);
      try {
        pending.push_back(allreduce_async_(change, slots[i].name, reduce));
      } catch (...) {
        if (!error) error = std::current_exception();
      }
    }
    std::exception_ptr failed;
    try {
      detail::wait_all(pending, error);
    } catch (...) {
      failed = std::current_exception();
    }
    for (std::size_t i = 0; i < slots.size(); ++i) slots[i].param.detach().add_(starts[i]);
    if (failed) std::rethrow_exception(failed);
  }

  void synchronize() {
    if (!reduce.process_set.included() || combines_changes()) {  // Adasum: nothing travels before step()
      end_passes();
      synchronized = true;
      return;
    }
    std::vector<Handle> pending;
    std::exception_ptr error;
    {
      std::lock_guard lock(mutex);
      for (Slot& s : slots) {
        if (!s.submitted) {
          try {
            submit(s);
          } catch (...) {
            if (!error) error = std::current_exception();
          }
        }
        if (s.submitted) pending.push_back(s.handle);
        s.passes_left = options.backward_passes_per_step;
        s.touched = false;
        s.submitted = false;
        s.handle = Handle();
      }
    }
    // kolo must be done with the gradients before anyone touches them again.
    detail::wait_all(pending, error);
    synchronized = true;
  }
};

DistributedOptimizer::DistributedOptimizer(::torch::optim::Optimizer& optimizer, const NamedTensors& named_parameters,
                                           DistributedOptimizerOptions options)
    : impl_(std::make_shared<Impl>(optimizer, std::move(options))) {
  Impl& impl = *impl_;
  std::unordered_map<const c10::TensorImpl*, const std::string*> names;
  std::map<std::string, int> seen;
  for (const auto& [name, tensor] : named_parameters) {
    if (seen[name]++ == 1) invalid("the parameter name '" + name + "' is given twice; names must be unique");
    names.emplace(tensor.unsafeGetTensorImpl(), &name);
  }
  const std::string prefix = name_prefix(impl.reduce.process_set);
  const auto& groups = optimizer.param_groups();
  for (std::size_t g = 0; g < groups.size(); ++g) {
    for (std::size_t j = 0; j < groups[g].params().size(); ++j) {
      const at::Tensor& p = groups[g].params()[j];
      if (!p.requires_grad()) continue;
      std::string name;
      if (named_parameters.empty()) {
        name = "noname." + std::to_string(g) + "." + std::to_string(j);  // Horovod's names without names
      } else if (auto it = names.find(p.unsafeGetTensorImpl()); it != names.end()) {
        name = *it->second;
      } else {
        invalid("parameter " + std::to_string(j) + " of param group " + std::to_string(g) + " (shape " +
                c10::str(p.sizes()) + ") is not among the named parameters given");
      }
      impl.slots.push_back({prefix + "." + name, p, impl.options.backward_passes_per_step});
    }
  }
  // A rank outside the process set takes no part: its gradients stay its own (Horovod's).
  if (!impl.reduce.process_set.included()) return;
  std::weak_ptr<Impl> weak = impl_;
  for (std::size_t i = 0; i < impl.slots.size(); ++i) {
    Impl::Hooked h;
    h.accumulator = ::torch::autograd::impl::grad_accumulator(impl.slots[i].param);
    if (!h.accumulator) invalid("parameter '" + impl.slots[i].name + "' is not a leaf tensor");
    auto before = std::make_unique<Impl::BeforeAccumulation>(weak, i);
    h.before = before.get();
    h.accumulator->add_pre_hook(std::move(before));
    h.after = h.accumulator->add_post_hook(std::make_unique<Impl::AfterAccumulation>(weak, i));
    impl.hooks.push_back(std::move(h));
  }
}

DistributedOptimizer::~DistributedOptimizer() {
  // Here rather than in Impl's destructor, which may run inside one of these hooks (a
  // backward pass on another thread holding the last reference).
  for (Impl::Hooked& h : impl_->hooks) {
    auto& pre = h.accumulator->pre_hooks();
    std::erase_if(pre, [&](const auto& hook) { return hook.get() == h.before; });
    h.accumulator->del_post_hook(h.after);
  }
}

void DistributedOptimizer::synchronize() { impl_->synchronize(); }

void DistributedOptimizer::step() {
  if (impl_->combines_changes()) {
    impl_->step_combining_changes();
    impl_->synchronized = false;
    return;
  }
  if (!impl_->synchronized) impl_->synchronize();
  impl_->synchronized = false;
  impl_->optimizer.step();
}

void DistributedOptimizer::zero_grad() {
  {
    std::lock_guard lock(impl_->mutex);
    for (const Impl::Slot& s : impl_->slots) {
      if (s.touched) {
        invalid("zero_grad() was called after backward but before step() or synchronize() (gradient '" + s.name +
                "'); kolo may still be reducing it");
      }
    }
  }
  impl_->optimizer.zero_grad();
}

::torch::optim::Optimizer& DistributedOptimizer::optimizer() { return impl_->optimizer; }

}  // namespace kolo::torch
