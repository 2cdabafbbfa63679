// Torch tensors as kolo TensorViews, and kolo::torch::Handle.
#include "tensors.h"

#include <map>
#include <memory>
#include <utility>

namespace kolo::torch {

DType to_kolo_dtype(at::ScalarType type) {
  switch (type) {
    case at::kFloat: return DType::Float32;
    case at::kDouble: return DType::Float64;
    case at::kHalf: return DType::Float16;
    case at::kBFloat16: return DType::BFloat16;
    case at::kChar: return DType::Int8;
    case at::kByte: return DType::UInt8;
    case at::kShort: return DType::Int16;
    case at::kInt: return DType::Int32;
    case at::kLong: return DType::Int64;
    default:
      throw Error(StatusCode::InvalidArgument,
                  std::string("kolo: torch dtype ") + c10::toString(type) +
                      " is not supported; kolo takes float32, float64, float16, bfloat16, int8, uint8, int16, int32 and int64");
  }
}

at::ScalarType to_torch_dtype(DType dtype) {
  switch (dtype) {
    case DType::Float32: return at::kFloat;
    case DType::Float64: return at::kDouble;
    case DType::Float16: return at::kHalf;
    case DType::BFloat16: return at::kBFloat16;
    case DType::Int8: return at::kChar;
    case DType::UInt8: return at::kByte;
    case DType::Int16: return at::kShort;
    case DType::Int32: return at::kInt;
    case DType::Int64: return at::kLong;
  }
  throw Error(StatusCode::Internal, "kolo: unknown dtype " + std::to_string(static_cast<int>(dtype)));
}

namespace detail {

Prepared prepare(const at::Tensor& tensor, const char* op, const std::string& name) {
  const std::string what = std::string("kolo: ") + op + (name.empty() ? "" : " '" + name + "'");
  if (!tensor.defined()) throw Error(StatusCode::InvalidArgument, what + ": the tensor is undefined");
  if (tensor.is_sparse()) {
    throw Error(StatusCode::InvalidArgument, what + ": sparse tensors are not supported (use sparse_allreduce_async)");
  }
  DType dtype;
  try {
    dtype = to_kolo_dtype(tensor.scalar_type());
  } catch (const Error& e) {
    throw Error(e.code(), what + ": " + (e.what() + 6));  // drop the "kolo: " of the message
  }
  Device device;
  if (tensor.is_cuda()) {
    device = Device::cuda(tensor.get_device());
  } else if (!tensor.is_cpu()) {
    throw Error(StatusCode::InvalidArgument,
                what + ": the tensor is on " + tensor.device().str() + "; kolo takes CPU and CUDA tensors");
  }
  Prepared p;
  p.contiguous = tensor.is_contiguous() ? tensor : tensor.contiguous();
  if (!tensor.is_contiguous()) p.copy_back_to = tensor;
  p.view = TensorView{p.contiguous.data_ptr(), dtype, p.contiguous.sizes().vec(), device};
  return p;
}

}  // namespace detail

struct Handle::State {
  kolo::Handle op;
  detail::Result kind = detail::Result::Written;
  detail::Prepared input;  // kept alive until the operation is done
  at::Tensor written;      // Result::Written: the tensor kolo writes

  std::mutex mutex;  // guards what wait() fills in
  bool finished = false;
  Status status;
  at::Tensor result;
};

namespace detail {

Handle wrap(kolo::Handle op, Result kind, Prepared input, at::Tensor written) {
  if (op.ready()) {
    Status early = op.wait();
    if (early.code() == StatusCode::InvalidArgument) throw Error(early.code(), early.message());
  }
  auto state = std::make_shared<Handle::State>();
  state->op = std::move(op);
  state->kind = kind;
  state->input = std::move(input);
  state->written = std::move(written);
  return Handle(std::move(state));
}

void wait_all(const std::vector<Handle>& handles, std::exception_ptr earlier) {
  for (const Handle& h : handles) {
    try {
      h.wait();
    } catch (...) {
      if (!earlier) earlier = std::current_exception();
    }
  }
  if (earlier) std::rethrow_exception(earlier);
}

}  // namespace detail

namespace {

// The operation's own output (allgather, alltoall, reducescatter) as a tensor that keeps
// kolo's buffer, and so the handle, alive: no copy.
at::Tensor produced_tensor(const kolo::Handle& op) {
  TensorView out = op.output();
  auto options = at::TensorOptions().dtype(to_torch_dtype(out.dtype));
  options = out.device.is_cpu() ? options.device(at::kCPU) : options.device(at::kCUDA, out.device.index);
  if (out.num_elements() == 0 || out.data == nullptr) return at::empty(out.shape, options);
  kolo::Handle owner = op;
  return at::from_blob(out.data, out.shape, [owner](void*) {}, options);
}

}  // namespace

bool Handle::ready() const {
  if (!state_) throw Error(StatusCode::InvalidArgument, "kolo: ready() on an empty Handle");
  return state_->op.ready();
}

at::Tensor Handle::wait() const {
  if (!state_) throw Error(StatusCode::InvalidArgument, "kolo: wait() on an empty Handle");
  State& s = *state_;
  std::lock_guard lock(s.mutex);
  if (!s.finished) {
    s.status = s.op.wait();
    if (s.status.ok()) {
      if (s.kind == detail::Result::Produced) {
        s.result = produced_tensor(s.op);
      } else {
        s.result = s.written;
        if (s.input.copy_back_to.defined() && s.written.is_same(s.input.contiguous)) {
          // An in-place call on a non-contiguous tensor. kolo wrote its data, as it writes a
          // contiguous one's, outside autograd: a leaf that requires grad (a parameter,
          // broadcast_parameters) takes the copy as well.
          at::NoGradGuard no_grad;
          s.input.copy_back_to.copy_(s.written);
          s.result = s.input.copy_back_to;
        }
      }
    }
    s.input = detail::Prepared();  // kolo is done with it
    s.finished = true;
  }
  s.status.throw_if_error();
  return s.result;
}

std::vector<int64_t> Handle::received_splits() const {
  wait();
  return state_->op.received_splits();
}

}  // namespace kolo::torch
