// kolo's collectives on torch tensors: each prepares its tensors, submits them through
// kolo's public API and wraps the handle (tensors.h).
#include <utility>

#include "tensors.h"

namespace kolo::torch {

using detail::prepare;
using detail::Prepared;
using detail::Result;
using detail::wrap;

namespace {

std::string member_name(const std::string& name, std::size_t i) {
  return name.empty() ? std::string() : name + "." + std::to_string(i);
}

// kolo's API answers an empty group with one failed handle, which has no tensor to wrap.
void require_members(const std::vector<at::Tensor>& tensors, const char* op) {
  if (tensors.empty()) throw Error(StatusCode::InvalidArgument, std::string("kolo: ") + op + " of an empty list of tensors");
}

// Out of place: kolo reads the input and writes a new tensor of its shape.
Handle allreduce_into_new(const at::Tensor& tensor, const std::string& name, const AllreduceOptions& options) {
  Prepared in = prepare(tensor, "allreduce", name);
  at::Tensor out = at::empty_like(in.contiguous, at::MemoryFormat::Contiguous);
  TensorView out_view = in.view;
  out_view.data = out.data_ptr();
  kolo::Handle op = kolo::allreduce_async(name, in.view, out_view, options);
  in.copy_back_to.reset();  // the caller's tensor is not written
  return wrap(std::move(op), Result::Written, std::move(in), out);
}

std::vector<Handle> grouped_allreduce(const std::vector<at::Tensor>& tensors, const std::string& name,
                                      const AllreduceOptions& options, bool in_place) {
  require_members(tensors, "grouped_allreduce");
  std::vector<std::string> names;
  std::vector<Prepared> inputs;
  std::vector<at::Tensor> outputs;
  std::vector<TensorView> in_views, out_views;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    names.push_back(member_name(name, i));
    Prepared in = prepare(tensors[i], "grouped_allreduce", names.back());
    at::Tensor out = in_place ? in.contiguous : at::empty_like(in.contiguous, at::MemoryFormat::Contiguous);
    if (!in_place) in.copy_back_to.reset();
    in_views.push_back(in.view);
    out_views.push_back(in.view);
    out_views.back().data = out.data_ptr();
    inputs.push_back(std::move(in));
    outputs.push_back(std::move(out));
  }
  std::vector<kolo::Handle> ops = kolo::grouped_allreduce_async(names, in_views, out_views, options);
  std::vector<Handle> handles;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    handles.push_back(
        wrap(std::move(ops[i]), Result::Written, std::move(inputs[i]), outputs[i]));
  }
  return handles;
}

// The grouped forms whose results kolo produces (allgather, reducescatter).
template <typename Submit>
std::vector<Handle> grouped_produced(const std::vector<at::Tensor>& tensors, const std::string& name, const char* op,
                                     const ProcessSet& set, Submit submit) {
  require_members(tensors, op);
  std::vector<std::string> names;
  std::vector<Prepared> inputs;
  std::vector<TensorView> views;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    names.push_back(member_name(name, i));
    inputs.push_back(prepare(tensors[i], op, names.back()));
    views.push_back(inputs.back().view);
  }
  std::vector<kolo::Handle> ops = submit(names, views);
  std::vector<Handle> handles;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    handles.push_back(wrap(std::move(ops[i]), Result::Produced, std::move(inputs[i]), {}));
  }
  return handles;
}

}  // namespace

Handle allreduce_async(const at::Tensor& tensor, const std::string& name, const AllreduceOptions& options) {
  return allreduce_into_new(tensor, name, options);
}

Handle allreduce_async_(const at::Tensor& tensor, const std::string& name, const AllreduceOptions& options) {
  Prepared inout = prepare(tensor, "allreduce", name);
  kolo::Handle op = kolo::allreduce_async(name, inout.view, options);
  at::Tensor written = inout.contiguous;
  return wrap(std::move(op), Result::Written, std::move(inout), written);
}

at::Tensor allreduce(const at::Tensor& tensor, const std::string& name, const AllreduceOptions& options) {
  return allreduce_async(tensor, name, options).wait();
}

std::vector<Handle> grouped_allreduce_async(const std::vector<at::Tensor>& tensors, const std::string& name,
                                            const AllreduceOptions& options) {
  return grouped_allreduce(tensors, name, options, /*in_place=*/false);
}

std::vector<Handle> grouped_allreduce_async_(const std::vector<at::Tensor>& tensors, const std::string& name,
                                             const AllreduceOptions& options) {
  return grouped_allreduce(tensors, name, options, /*in_place=*/true);
}

Handle allgather_async(const at::Tensor& tensor, const std::string& name, const ProcessSet& set) {
  Prepared in = prepare(tensor, "allgather", name);
  kolo::Handle op = kolo::allgather_async(name, in.view, set);
  return wrap(std::move(op), Result::Produced, std::move(in), {});
}

std::vector<Handle> grouped_allgather_async(const std::vector<at::Tensor>& tensors, const std::string& name,
                                            const ProcessSet& set) {
  return grouped_produced(tensors, name, "grouped_allgather", set, [&](const auto& names, const auto& views) {
    return kolo::grouped_allgather_async(names, views, set);
  });
}

Handle broadcast_async(const at::Tensor& tensor, int root, const std::string& name, const ProcessSet& set) {
  // The result is new data, not a function of this rank's input: no autograd graph (Horovod
  // makes it with tensor.new(); the differentiable form is Python's broadcast()).
  return broadcast_async_(tensor.detach().clone(at::MemoryFormat::Contiguous), root, name, set);
}

Handle broadcast_async_(const at::Tensor& tensor, int root, const std::string& name, const ProcessSet& set) {
  Prepared buffer = prepare(tensor, "broadcast", name);
  kolo::Handle op = kolo::broadcast_async(name, buffer.view, root, set);
  at::Tensor written = buffer.contiguous;
  return wrap(std::move(op), Result::Written, std::move(buffer), written);
}

Handle alltoall_async(const at::Tensor& tensor, const std::vector<int64_t>& splits, const std::string& name,
                      const ProcessSet& set) {
  Prepared in = prepare(tensor, "alltoall", name);
  kolo::Handle op = kolo::alltoall_async(name, in.view, splits, set);
  return wrap(std::move(op), Result::Produced, std::move(in), {});
}

Handle reducescatter_async(const at::Tensor& tensor, const std::string& name, const ReducescatterOptions& options) {
  Prepared in = prepare(tensor, "reducescatter", name);
  kolo::Handle op = kolo::reducescatter_async(name, in.view, options);
  return wrap(std::move(op), Result::Produced, std::move(in), {});
}

std::vector<Handle> grouped_reducescatter_async(const std::vector<at::Tensor>& tensors, const std::string& name,
                                                const ReducescatterOptions& options) {
  return grouped_produced(tensors, name, "grouped_reducescatter", options.process_set,
                          [&](const auto& names, const auto& views) {
    return kolo::grouped_reducescatter_async(names, views, options);
  });
}

}  // namespace kolo::torch
