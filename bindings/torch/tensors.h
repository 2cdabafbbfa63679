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

// Wraps a submitted kolo handle. Throws the handle's error at once when kolo rejected the
// call on this rank (InvalidArgument: a bad root, a name still in flight, ...).
Handle wrap(kolo::Handle op, Result kind, Prepared tensor, at::Tensor written);

// Waits for every handle, also after one has failed (a handle let go of early would free
// the copies kolo may still be writing), then rethrows the first failure: `earlier`, if
// the caller already has one.
void wait_all(const std::vector<Handle>& handles, std::exception_ptr earlier = nullptr);

}  // namespace kolo::torch::detail
