// DistributedOptimizer: Horovod's DistributedOptimizer over kolo's runtime. The net's
// grad-ready hook submits each parameter's allreduce the moment backward has finished
// that gradient (in place on p.grad), so communication overlaps the rest of backward;
// step() submits whatever the hook did not see, waits, and updates. Float16 compression is
// the runtime's (AllreduceOptions::compression): it casts in its fusion buffer, on any device.
//
// The contract is horovod.torch's, the same as kolo::torch's and kolo.torch's
// (docs/distributed.md, "One contract"): with n backward passes per step the passes'
// gradients add up (not divided by n); f = gradient_predivide_factor:
//   Average: op Average, prescale 1/f, postscale f      -> Σ_r g_r / size
//   Sum:     op Sum                                      -> Σ_r g_r
//   Adasum:  each rank steps on its own gradients, and the ranks' parameter changes are
//            combined with Adasum (on one rank: the plain step).
#include <cmath>
#include <cstdio>
#include <unordered_map>

#include "kolo/models.h"
#include "models/distributed/handles.h"
#include "models/distributed/node_shared.h"
#include "models/kernels.h"

namespace kolo::models {
namespace {

[[noreturn]] void invalid(const std::string& what) {
  throw Error(StatusCode::InvalidArgument, "kolo: DistributedOptimizer: " + what);
}

void check_options(const DistributedOptions& o) {
  if (o.op != ReduceOp::Average && o.op != ReduceOp::Sum && o.op != ReduceOp::Adasum)
    invalid(std::string("op must be average, sum or adasum, got ") + op_name(o.op));
  const double f = o.gradient_predivide_factor;
  if (!(f > 0) || !std::isfinite(f))
    invalid("gradient_predivide_factor must be positive and finite, got " + std::to_string(f));
  if (f != 1.0 && o.op != ReduceOp::Average)
    invalid("gradient_predivide_factor " + std::to_string(f) + " needs op average (as in Horovod), got " +
            op_name(o.op));
  if (o.backward_passes_per_step < 1)
    invalid("backward_passes_per_step must be at least 1, got " + std::to_string(o.backward_passes_per_step));
  if (o.compression != Compression::None && o.compression != Compression::FP16)
    invalid("unknown compression " + std::to_string(static_cast<int>(o.compression)));
}

}  // namespace

struct DistributedOptimizer::Impl {
  struct Slot {
    explicit Slot(Parameter* p) : param(p) {}
    Parameter* param;
    Handle handle;
    bool announced = false;      // the hook has fired for it in this pass
    bool submitted = false;      // its allreduce is in flight (or done) for this step
  };

  Impl(Module& net, const DistributedOptions& options) : net(net), options(options) {}

  Module& net;
  DistributedOptions options;
  std::vector<Slot> slots;
  std::unordered_map<const Parameter*, std::size_t> index;
  int pass = 0;               // passes already accumulated into this step
  bool synchronized = false;  // synchronize() has run for this step
  // Set when options.node_shared_update serves this job: then nothing is submitted.
  std::unique_ptr<distributed_detail::NodeSharedUpdate> shared;

  AllreduceOptions reduce_options() const {
    const double f = options.gradient_predivide_factor;  // 1 unless op Average
    AllreduceOptions reduce{options.op, 1.0 / f, f};
    if (options.compression == Compression::FP16) reduce.compression = kolo::Compression::FP16;
    return reduce;
  }

  // Adasum over more than one rank combines parameter changes at step(), not gradients.
  bool combines_changes() const { return options.op == ReduceOp::Adasum && size() > 1; }

  void submit(Slot& s) {
    Tensor& grad = s.param->grad;
    const std::string name = options.name_prefix + s.param->name;
    s.handle = allreduce_async(name, grad.view(), reduce_options());
    s.submitted = true;
  }

  void on_grad_ready(Parameter& p) {
    const auto it = index.find(&p);
    if (it == index.end()) return;  // not one of this optimizer's parameters
    Slot& s = slots[it->second];
    // A second announcement would race with the allreduce running on the same memory.
    if (s.announced)
      invalid("the gradient of '" + p.name +
              "' was produced twice in one pass; call step() after each backward pass (with "
              "backward_passes_per_step > 1, every step() call counts one pass)");
    s.announced = true;
    if (pass + 1 == options.backward_passes_per_step && !combines_changes() && !shared) submit(s);
  }

  // Submits what is missing and waits for everything.
  Status finish() {
    if (combines_changes()) return Status::OK();  // nothing travels before step()
    std::vector<Handle> handles;
    for (Slot& s : slots) {
      if (!s.submitted) submit(s);
      handles.push_back(s.handle);
    }
    return distributed_detail::wait_all(handles);
  }

  // Horovod's Adasum optimizer: each rank steps on its own gradients, then the ranks'
  // changes to each parameter are combined with Adasum and added to where it started.
  void step_combining_changes(Optimizer& optimizer) {
    std::vector<Tensor> minus_start;  // -value before the step: the change is value + this
    for (Slot& s : slots) {
      minus_start.push_back(s.param->value.clone());
      Tensor& m = minus_start.back();
      kernels(m.device()).scale(m.numel(), m.data(), -1.0f);
    }
    optimizer.step();
    std::vector<Handle> handles;
    for (std::size_t i = 0; i < slots.size(); ++i) {
      Tensor& value = slots[i].param->value;
      kernels(value.device()).add_into(value.numel(), value.data(), minus_start[i].data());
      handles.push_back(allreduce_async(options.name_prefix + slots[i].param->name, value.view(), reduce_options()));
    }
    const Status status = distributed_detail::wait_all(handles);
    for (std::size_t i = 0; i < slots.size(); ++i) {  // a parameter again, also after a failure
      Tensor& value = slots[i].param->value;
      kernels(value.device()).scale(value.numel(), minus_start[i].data(), -1.0f);
      kernels(value.device()).add_into(value.numel(), value.data(), minus_start[i].data());
    }
    if (!status.ok())
      throw Error(status.code(), "kolo: DistributedOptimizer: combining the updates with Adasum failed: " + status.message());
  }

  void end_pass() {
    for (Slot& s : slots) s.announced = false;
  }

  void end_step() {
    end_pass();
    for (Slot& s : slots) {
      s.submitted = false;
      s.handle = Handle();
    }
    pass = 0;
    synchronized = false;
  }

};

DistributedOptimizer::DistributedOptimizer(Optimizer& optimizer, Module& net, const DistributedOptions& options)
    : optimizer_(optimizer), impl_(std::make_unique<Impl>(net, options)) {
  distributed_detail::require_initialized("DistributedOptimizer");
  check_options(options);
  std::unordered_map<std::string, const Parameter*> names;
  for (Parameter* p : optimizer.parameters()) {
    if (!p) invalid("the optimizer holds a null parameter");
    if (!names.emplace(p->name, p).second)
      invalid("two parameters are named '" + p->name + "'; gradients travel by name, so names must be unique");
    if (p->grad.numel() != p->value.numel())
      invalid("parameter '" + p->name + "' " + shape_string(p->value.shape()) + " has a gradient of " +
              std::to_string(p->grad.numel()) + " values");
    impl_->index.emplace(p, impl_->slots.size());
    impl_->slots.emplace_back(p);
  }
  if (options.node_shared_update && size() > 1) {
    std::string why;
    impl_->shared = distributed_detail::NodeSharedUpdate::create(optimizer, options, &why);
    if (!impl_->shared && !why.empty())
      std::fprintf(stderr, "kolo: rank %d: DistributedOptimizer: node_shared_update ignored: %s; averaging by allreduce\n",
                   rank(), why.c_str());
  }
  Impl* impl = impl_.get();
  net.set_grad_ready_hook([impl](Parameter& p) { impl->on_grad_ready(p); });
}

DistributedOptimizer::~DistributedOptimizer() {
  impl_->net.set_grad_ready_hook(nullptr);
  // The runtime may still be writing into the gradients or the float16 copies.
  std::vector<Handle> handles;
  for (const Impl::Slot& s : impl_->slots)
    if (s.submitted) handles.push_back(s.handle);
  distributed_detail::wait_all(handles);
}

bool DistributedOptimizer::step() {
  Impl& d = *impl_;
  if (!d.synchronized && d.pass + 1 < d.options.backward_passes_per_step) {
    ++d.pass;  // keep accumulating
    d.end_pass();
    return false;
  }
  if (d.shared) {
    const bool averaged = d.synchronized;
    d.end_step();
    d.shared->step(averaged);
    return true;
  }
  synchronize();
  d.end_step();  // before the update: an optimizer that throws must not leave this step open
  if (d.combines_changes()) d.step_combining_changes(optimizer_);
  else optimizer_.step();
  return true;
}

void DistributedOptimizer::synchronize() {
  Impl& d = *impl_;
  if (d.synchronized) return;
  if (d.shared) {
    d.shared->average_everywhere();
    d.synchronized = true;
    return;
  }
  const Status status = d.finish();
  if (!status.ok()) {
    d.end_step();
    throw Error(status.code(), "kolo: DistributedOptimizer: averaging the gradients failed: " + status.message());
  }
  d.synchronized = true;
}

void DistributedOptimizer::zero_grad() {
  Impl& d = *impl_;
  if (d.pass != 0) return;  // between the passes of one step: keep accumulating
  for (const Impl::Slot& s : d.slots)
    if (s.submitted && !d.synchronized)
      invalid("zero_grad() after backward and before step(): the gradient of '" + s.param->name +
              "' is being averaged; call step() (or synchronize()) first");
  // After synchronize() without step(), the averaged gradients are discarded and the next
  // backward starts a new step.
  d.end_step();
  optimizer_.zero_grad();
}

}  // namespace kolo::models
