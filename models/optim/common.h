// What the optimizers share (private to models/optim): checks, and saving/loading their
// buffers by parameter name.
//
// An optimizer's state is a set of per-parameter buffers ("momentum/fc.weight") plus a few
// scalars ("lr", "step"). Loading checks everything before changing anything, so a state
// that does not fit leaves the optimizer as it was and the error names the tensor.
#pragma once

#include <string>
#include <vector>

#include "kolo/models.h"
#include "models/kernels.h"

namespace kolo::models::optim_detail {

// Throws if two parameters share a name: the state is keyed by name, so they would clash.
void check_unique_names(const std::vector<Parameter*>& params, const std::string& optimizer);

// Adds "<kind>/<parameter name>" for each buffer (nothing while `buffers` is still empty,
// i.e. before the first step).
void save_buffers(OptimizerState& state, const std::string& kind, const std::vector<Parameter*>& params,
                  const std::vector<std::vector<float>>& buffers);

// The "<kind>/..." buffers of `state` in parameter order, or an empty vector if the state
// has none of them (saved before the first step). Throws kolo::Error naming the tensor if
// some are missing or a size differs from its parameter's.
std::vector<std::vector<float>> load_buffers(const OptimizerState& state, const std::string& kind,
                                             const std::vector<Parameter*>& params, const std::string& optimizer);

// Throws naming the first tensor of `state` whose kind is not one of `kinds` or whose
// parameter is not one of `params` (a state saved for another net or another optimizer).
void check_known_tensors(const OptimizerState& state, const std::vector<std::string>& kinds,
                         const std::vector<Parameter*>& params, const std::string& optimizer);

// The same for buffers kept as tensors on the parameters' device (copied to the host).
void save_buffers(OptimizerState& state, const std::string& kind,
                  const std::vector<Parameter*>& params, const std::vector<Tensor>& buffers);
// Loaded buffers (load_buffers' result) as tensors on each parameter's device.
std::vector<Tensor> to_parameter_devices(const std::vector<std::vector<float>>& buffers,
                                         const std::vector<Parameter*>& params);
// Moves buffers to their parameters' devices where a Module::to has moved the parameters.
void follow_parameters(std::vector<Tensor>& buffers, const std::vector<Parameter*>& params);
// The device every parameter (value and grad) is on: the CPU for none; throws kolo::Error
// naming a parameter elsewhere.
Device parameters_device(const std::vector<Parameter*>& params, const std::string& optimizer);

// What a Kernels optimizer step gets: each parameter's value and gradient, with its
// buffers from `state1` and `state2` (null where a vector is empty: SGD without momentum),
// cut to elements [begin, end) of the parameters taken end to end (Optimizer::set_update_range).
std::vector<Kernels::UpdateTensors> update_tensors(const std::vector<Parameter*>& params, std::vector<Tensor>& state1,
                                                   std::vector<Tensor>& state2, int64_t begin, int64_t end);

// The scalar `name`, or `fallback` if the state does not have it.
double scalar_or(const OptimizerState& state, const std::string& name, double fallback);
// The scalar "step" as a count: throws unless it is a non-negative integer.
int64_t step_count(const OptimizerState& state, const std::string& optimizer);
// Whether `lr` is a learning rate: finite and 0 or more (inf or nan would train on silently).
bool is_learning_rate(double lr);
// The scalar "lr", or `fallback` without one: throws unless it is a learning rate.
double lr_of(const OptimizerState& state, double fallback, const std::string& optimizer);

// Throws unless p.grad has as many values as p.value (a hand-made Parameter may lack one).
void check_grad(const Parameter& p, const std::string& optimizer);

[[noreturn]] void fail(const std::string& optimizer, const std::string& message);

}  // namespace kolo::models::optim_detail
