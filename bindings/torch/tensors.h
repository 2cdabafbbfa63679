// The bridge between torch tensors and kolo's: dtypes, views over a tensor's storage, and
// the state a kolo::torch::Handle keeps while its operation runs. Private to bindings/torch.
#pragma once

#include <exception>
#include <mutex>
#include <string>
#include <vector>

#include "kolo/torch.h"

namespace kolo::torch::detail {

// What a Handle turns into a result once kolo is done.
enum class Result {
  Written,   // kolo wrote `written` (allreduce, broadcast)
  Produced,  // kolo's handle owns the result (allgather, alltoall, reducescatter)
};

// A tensor as kolo will see it: contiguous, and the caller's tensor to copy the result
// back into when it was not.
struct Prepared {
  at::Tensor contiguous;
  at::Tensor copy_back_to;  // undefined when `contiguous` is the caller's tensor
  TensorView view;
};

// Checks `tensor` for `op` (its dtype and device) and returns its contiguous form.
Prepared prepare(const at::Tensor& tensor, const char* op, const std::string& name);

// Throws InvalidArgument if one of `names` (of process set `set`) is still in flight from an
// earlier call through this adapter. kolo itself finds a name submitted twice only when its
// background thread takes the second, a cycle later; this makes it an error of the call.
void check_not_in_flight(const ProcessSet& set, const std::vector<std::string>& names);

// Wraps a submitted kolo handle, the operation `name` of `set` (in flight until it is done).
// Throws the handle's error at once when kolo rejected the call on this rank
// (InvalidArgument: a bad root, ...).
Handle wrap(kolo::Handle op, Result kind, Prepared tensor, at::Tensor written, const ProcessSet& set,
            const std::string& name);

// Waits for every handle, also after one has failed (a handle let go of early would free
// the copies kolo may still be writing), then rethrows the first failure: `earlier`, if
// the caller already has one.
void wait_all(const std::vector<Handle>& handles, std::exception_ptr earlier = nullptr);

}  // namespace kolo::torch::detail
