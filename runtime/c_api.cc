// The C API (include/kolo/kolo_c.h) over the C++ one: handles become integers in a
// table, exceptions become kolo_status codes plus a per-thread error message.
#include "kolo/kolo_c.h"

#include <cstring>
#include <mutex>
#include <unordered_map>

#include "devices.h"
#include "kolo/check.h"
#include "kolo/kolo.h"

namespace {

using kolo::StatusCode;

// A kolo_status is its StatusCode negated: the C names must stay in step with kolo.h's.
constexpr int c_status(StatusCode code) { return -static_cast<int>(code); }
static_assert(c_status(StatusCode::Ok) == KOLO_OK);
static_assert(c_status(StatusCode::Pending) == KOLO_PENDING);
static_assert(c_status(StatusCode::InvalidArgument) == KOLO_INVALID_ARGUMENT);
static_assert(c_status(StatusCode::Mismatch) == KOLO_MISMATCH);
static_assert(c_status(StatusCode::Stalled) == KOLO_STALLED);
static_assert(c_status(StatusCode::Aborted) == KOLO_ABORTED);
static_assert(c_status(StatusCode::CommFailure) == KOLO_COMM_FAILURE);
static_assert(c_status(StatusCode::IoError) == KOLO_IO_ERROR);
static_assert(c_status(StatusCode::DeviceError) == KOLO_DEVICE_ERROR);
static_assert(c_status(StatusCode::Internal) == KOLO_INTERNAL);
static_assert(c_status(StatusCode::Unsupported) == KOLO_UNSUPPORTED);
// A kolo_op is its ReduceOp.
static_assert(static_cast<int>(kolo::ReduceOp::Product) == KOLO_PRODUCT);
static_assert(static_cast<int>(kolo::ReduceOp::Adasum) == KOLO_ADASUM);

thread_local std::string t_last_error;
std::mutex g_handles_mutex;
std::unordered_map<kolo_handle, kolo::Handle> g_handles;
kolo_handle g_next_handle = 1;

int fail(StatusCode code, const std::string& message) {
  t_last_error = message;
  return c_status(code);
}

int fail(const kolo::Status& status) { return fail(status.code(), status.message()); }

int unknown_handle(kolo_handle h) {
  return fail(StatusCode::InvalidArgument, "kolo: unknown handle " + std::to_string(h));
}

// Runs `body`, turning an exception into its kolo_status and the thread's last error. An
// exception that is not a kolo::Error (std::bad_alloc, say) counts as Internal.
template <typename F>
auto guarded(F&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const kolo::Error& e) {
    return fail(e.code(), e.what());
  } catch (const std::exception& e) {
    return fail(StatusCode::Internal, e.what());
  }
}

const char* checked_name(const char* name) {
  KOLO_CHECK(name != nullptr, StatusCode::InvalidArgument, "kolo: name is NULL");
  return name;
}

// The int a C caller passed as a kolo_dtype or kolo_op. A C enum holds any value of its
// integer type, but in C++ loading a value outside the enumerators as the enum is
// undefined: the parameter is taken by reference and read as an int, then checked.
template <typename CEnum>
int c_enum_value(const CEnum& value) {
  static_assert(sizeof(CEnum) == sizeof(int));
  int raw;
  std::memcpy(&raw, &value, sizeof raw);
  return raw;
}

kolo::TensorView make_view(const void* data, const kolo_dtype& c_dtype, int ndim, const int64_t* shape, int device) {
  KOLO_CHECK(ndim >= 0 && (ndim == 0 || shape != nullptr), StatusCode::InvalidArgument,
             "kolo: ndim must be >= 0 and shape non-null when ndim > 0");
  const int dtype = c_enum_value(c_dtype);
  KOLO_CHECK(dtype >= KOLO_FLOAT32 && dtype <= KOLO_INT64, StatusCode::InvalidArgument,
             "kolo: unknown dtype " + std::to_string(dtype));
  kolo::TensorView view;
  view.data = const_cast<void*>(data);
  view.dtype = static_cast<kolo::DType>(dtype);
  view.shape.assign(shape, shape + ndim);
  view.device = device < 0 ? kolo::Device::cpu() : kolo::Device::cuda(device);
  return view;
}

kolo::ReduceOp make_op(const kolo_op& c_op) {
  const int op = c_enum_value(c_op);
  KOLO_CHECK(op >= KOLO_SUM && op <= KOLO_ADASUM, StatusCode::InvalidArgument,
             "kolo: unknown reduction op " + std::to_string(op));
  return static_cast<kolo::ReduceOp>(op);
}

// A handle that failed before it was enqueued is reported at once, as the C API promises.
kolo_handle enroll(const kolo::Handle& handle) {
  if (handle.ready()) {
    kolo::Status status = handle.wait();
    if (!status.ok()) return fail(status);
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

const char* kolo_status_name(int status) {
  if (status > KOLO_OK || status < KOLO_UNSUPPORTED) return "unknown";
  return kolo::status_code_name(static_cast<StatusCode>(-status));
}

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
    kolo::AllreduceOptions options{make_op(op), prescale, postscale};
    return enroll(kolo::allreduce_async(checked_name(name), make_view(input, dtype, ndim, shape, device),
                                        make_view(output, dtype, ndim, shape, device), options));
  });
}

kolo_handle kolo_broadcast_async(const char* name, void* buffer, kolo_dtype dtype, int ndim,
                                 const int64_t* shape, int root, int device) {
  return guarded([&]() -> kolo_handle {
    return enroll(kolo::broadcast_async(checked_name(name), make_view(buffer, dtype, ndim, shape, device), root));
  });
}

kolo_handle kolo_allgather_async(const char* name, const void* input, kolo_dtype dtype, int ndim,
                                 const int64_t* shape, int device) {
  return guarded([&]() -> kolo_handle {
    return enroll(kolo::allgather_async(checked_name(name), make_view(input, dtype, ndim, shape, device)));
  });
}

kolo_handle kolo_alltoall_async(const char* name, const void* input, kolo_dtype dtype, int ndim,
                                const int64_t* shape, const int64_t* splits, int device) {
  return guarded([&]() -> kolo_handle {
    std::vector<int64_t> s;
    if (splits != nullptr) s.assign(splits, splits + kolo::size());
    return enroll(kolo::alltoall_async(checked_name(name), make_view(input, dtype, ndim, shape, device), s));
  });
}

kolo_handle kolo_reducescatter_async(const char* name, const void* input, kolo_dtype dtype, int ndim,
                                     const int64_t* shape, kolo_op op, int device) {
  return guarded([&]() -> kolo_handle {
    return enroll(kolo::reducescatter_async(checked_name(name), make_view(input, dtype, ndim, shape, device), make_op(op)));
  });
}

int kolo_poll(kolo_handle h) {
  kolo::Handle handle;
  if (!lookup(h, handle)) return unknown_handle(h);
  return handle.ready() ? 1 : 0;
}

int kolo_wait(kolo_handle h) {
  kolo::Handle handle;
  if (!lookup(h, handle)) return unknown_handle(h);
  const kolo::Status status = handle.wait();
  release(h);
  if (!status.ok()) return fail(status);
  return 0;
}

int64_t kolo_output_bytes(kolo_handle h) {
  kolo::Handle handle;
  if (!lookup(h, handle)) return unknown_handle(h);
  if (!handle.ready()) return KOLO_PENDING;
  const kolo::TensorView result = handle.output();
  if (result.data == nullptr && result.shape.empty()) return 0;  // an operation without a result
  return static_cast<int64_t>(result.num_bytes());
}

int kolo_wait_output(kolo_handle h, void* output, int64_t output_bytes, int64_t* first_dim) {
  kolo::Handle handle;
  if (!lookup(h, handle)) return unknown_handle(h);
  const kolo::Status status = handle.wait();
  release(h);
  if (!status.ok()) return fail(status);
  return guarded([&] {
    const kolo::TensorView result = handle.output();
    KOLO_CHECK(result.data != nullptr || !result.shape.empty(), StatusCode::InvalidArgument,
               "kolo: handle " + std::to_string(h) +
                   " has no result to copy (only allgather, alltoall and reducescatter have one)");
    KOLO_CHECK(static_cast<int64_t>(result.num_bytes()) <= output_bytes, StatusCode::InvalidArgument,
               "kolo: result has " + std::to_string(result.num_bytes()) + " bytes but the buffer holds " +
                   std::to_string(output_bytes));
    if (result.num_bytes() > 0) {
      if (result.device.is_cpu()) std::memcpy(output, result.data, result.num_bytes());
      else kolo::copy_gpu_result(output, result);
    }
    if (first_dim != nullptr) *first_dim = result.shape.empty() ? 0 : result.shape[0];
    return static_cast<int>(KOLO_OK);
  });
}

int kolo_set_cuda_stream(void* cuda_stream) {
  kolo::set_cuda_stream(cuda_stream);
  return 0;
}

int kolo_wait_on_stream(kolo_handle h, void* cuda_stream) {
  kolo::Handle handle;
  if (!lookup(h, handle)) return unknown_handle(h);
  const kolo::Status status = handle.wait_on_stream(cuda_stream);
  if (!status.ok()) return fail(status);
  return 0;
}

int kolo_barrier(void) {
  return guarded([] { kolo::barrier(); return 0; });
}

int kolo_join(void) {
  return guarded([] { kolo::join(); return 0; });
}

const char* kolo_error_message(void) { return t_last_error.c_str(); }
const char* kolo_last_error(void) { return kolo_error_message(); }

}  // extern "C"
