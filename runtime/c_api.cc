// The C API (include/kolo/kolo_c.h) over the C++ one: handles become integers in a
// table, exceptions become return codes plus a per-thread error message.
#include "kolo/kolo_c.h"

#include <cstring>
#include <mutex>
#include <unordered_map>

#include "devices.h"
#include "kolo/kolo.h"

namespace {

thread_local std::string t_last_error;
std::mutex g_handles_mutex;
std::unordered_map<kolo_handle, kolo::Handle> g_handles;
kolo_handle g_next_handle = 1;

int fail(const std::string& message) {
  t_last_error = message;
  return -1;
}

// Runs `body`, turning any exception into -1 and the thread's last error.
template <typename F>
auto guarded(F&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const std::exception& e) {
    return fail(e.what());
  }
}

kolo::TensorView make_view(const void* data, kolo_dtype dtype, int ndim, const int64_t* shape, int device) {
  if (ndim < 0 || (ndim > 0 && shape == nullptr))
    throw kolo::Error(kolo::StatusCode::InvalidArgument, "kolo: ndim must be >= 0 and shape non-null when ndim > 0");
  if (dtype < KOLO_FLOAT32 || dtype > KOLO_INT64)
    throw kolo::Error(kolo::StatusCode::InvalidArgument, "kolo: unknown dtype " + std::to_string(int(dtype)));
  kolo::TensorView view;
  view.data = const_cast<void*>(data);
  view.dtype = static_cast<kolo::DType>(dtype);
  view.shape.assign(shape, shape + ndim);
  view.device = device < 0 ? kolo::Device::cpu() : kolo::Device::cuda(device);
  return view;
}

kolo::ReduceOp make_op(kolo_op op) {
  if (op < KOLO_SUM || op > KOLO_PRODUCT)
    throw kolo::Error(kolo::StatusCode::InvalidArgument, "kolo: unknown reduction op " + std::to_string(int(op)));
  return static_cast<kolo::ReduceOp>(op);
}

// A handle that failed before it was enqueued is reported at once, as the C API promises.
kolo_handle enroll(const kolo::Handle& handle) {
  if (handle.ready()) {
    kolo::Status status = handle.wait();
    if (!status.ok()) return fail(status.message());
  }
  std::lock_guard<std::mutex> lock(g_handles_mutex);
  const kolo_handle id = g_next_handle++;
  g_handles.emplace(id, handle);
  return id;
}

bool lookup(kolo_handle h, kolo::Handle& out) {
  std::lock_guard<std::mutex> lock(g_handles_mutex);
  auto it = g_handles.find(h);
  if (it == g_handles.end()) return false;
  out = it->second;
  return true;
}

void release(kolo_handle h) {
  std::lock_guard<std::mutex> lock(g_handles_mutex);
  g_handles.erase(h);
}

}  // namespace

extern "C" {

int kolo_init(void) {
  return guarded([] { kolo::init(); return 0; });
}

int kolo_shutdown(void) {
  return guarded([] { kolo::shutdown(); return 0; });
}

int kolo_is_initialized(void) { return kolo::is_initialized() ? 1 : 0; }
int kolo_rank(void) { return guarded([] { return kolo::rank(); }); }
int kolo_size(void) { return guarded([] { return kolo::size(); }); }
int kolo_local_rank(void) { return guarded([] { return kolo::local_rank(); }); }
int kolo_local_size(void) { return guarded([] { return kolo::local_size(); }); }
int kolo_cross_rank(void) { return guarded([] { return kolo::cross_rank(); }); }
int kolo_cross_size(void) { return guarded([] { return kolo::cross_size(); }); }

kolo_handle kolo_allreduce_async(const char* name, const void* input, void* output, kolo_dtype dtype,
                                 int ndim, const int64_t* shape, kolo_op op, double prescale,
                                 double postscale, int device) {
  return guarded([&]() -> kolo_handle {
    if (name == nullptr) return fail("kolo: name is NULL");
    kolo::AllreduceOptions options{make_op(op), prescale, postscale};
    return enroll(kolo::allreduce_async(name, make_view(input, dtype, ndim, shape, device),
                                        make_view(output, dtype, ndim, shape, device), options));
  });
}

kolo_handle kolo_broadcast_async(const char* name, void* buffer, kolo_dtype dtype, int ndim,
                                 const int64_t* shape, int root, int device) {
  return guarded([&]() -> kolo_handle {
    if (name == nullptr) return fail("kolo: name is NULL");
    return enroll(kolo::broadcast_async(name, make_view(buffer, dtype, ndim, shape, device), root));
  });
}

kolo_handle kolo_allgather_async(const char* name, const void* input, kolo_dtype dtype, int ndim,
                                 const int64_t* shape, int device) {
  return guarded([&]() -> kolo_handle {
    if (name == nullptr) return fail("kolo: name is NULL");
    return enroll(kolo::allgather_async(name, make_view(input, dtype, ndim, shape, device)));
  });
}

kolo_handle kolo_alltoall_async(const char* name, const void* input, kolo_dtype dtype, int ndim,
                                const int64_t* shape, const int64_t* splits, int device) {
  return guarded([&]() -> kolo_handle {
    if (name == nullptr) return fail("kolo: name is NULL");
    std::vector<int64_t> s;
    if (splits != nullptr) s.assign(splits, splits + kolo::size());
    return enroll(kolo::alltoall_async(name, make_view(input, dtype, ndim, shape, device), s));
  });
}

kolo_handle kolo_reducescatter_async(const char* name, const void* input, kolo_dtype dtype, int ndim,
                                     const int64_t* shape, kolo_op op, int device) {
  return guarded([&]() -> kolo_handle {
    if (name == nullptr) return fail("kolo: name is NULL");
    return enroll(kolo::reducescatter_async(name, make_view(input, dtype, ndim, shape, device), make_op(op)));
  });
}

int kolo_poll(kolo_handle h) {
  kolo::Handle handle;
  if (!lookup(h, handle)) return fail("kolo: unknown handle " + std::to_string(h));
  return handle.ready() ? 1 : 0;
}

int kolo_wait(kolo_handle h) {
  kolo::Handle handle;
  if (!lookup(h, handle)) return fail("kolo: unknown handle " + std::to_string(h));
  const kolo::Status status = handle.wait();
  release(h);
  if (!status.ok()) return fail(status.message());
  return 0;
}

int64_t kolo_output_bytes(kolo_handle h) {
  kolo::Handle handle;
  if (!lookup(h, handle)) return fail("kolo: unknown handle " + std::to_string(h));
  if (!handle.ready()) return -1;
  const kolo::TensorView result = handle.output();
  if (result.data == nullptr && result.shape.empty()) return 0;  // an operation without a result
  return static_cast<int64_t>(result.num_bytes());
}

int kolo_wait_output(kolo_handle h, void* output, int64_t output_bytes, int64_t* first_dim) {
  kolo::Handle handle;
  if (!lookup(h, handle)) return fail("kolo: unknown handle " + std::to_string(h));
  const kolo::Status status = handle.wait();
  release(h);
  if (!status.ok()) return fail(status.message());
  const kolo::TensorView result = handle.output();
  if (result.data == nullptr && result.shape.empty())
    return fail("kolo: handle " + std::to_string(h) +
                " has no result to copy (only allgather, alltoall and reducescatter have one)");
  if (static_cast<int64_t>(result.num_bytes()) > output_bytes)
    return fail("kolo: result has " + std::to_string(result.num_bytes()) + " bytes but the buffer holds " +
                std::to_string(output_bytes));
  if (result.num_bytes() > 0) {
    if (result.device.is_cpu()) std::memcpy(output, result.data, result.num_bytes());
    else if (const int rc = guarded([&] { kolo::copy_gpu_result(output, result); return 0; }); rc != 0) return rc;
  }
  if (first_dim != nullptr) *first_dim = result.shape.empty() ? 0 : result.shape[0];
  return 0;
}

int kolo_set_cuda_stream(void* cuda_stream) {
  kolo::set_cuda_stream(cuda_stream);
  return 0;
}

int kolo_wait_on_stream(kolo_handle h, void* cuda_stream) {
  kolo::Handle handle;
  if (!lookup(h, handle)) return fail("kolo: unknown handle " + std::to_string(h));
  const kolo::Status status = handle.wait_on_stream(cuda_stream);
  if (!status.ok()) return fail(status.message());
  return 0;
}

int kolo_barrier(void) {
  return guarded([] { kolo::barrier(); return 0; });
}

int kolo_join(void) {
  return guarded([] { kolo::join(); return 0; });
}

const char* kolo_last_error(void) { return t_last_error.c_str(); }

}  // extern "C"
