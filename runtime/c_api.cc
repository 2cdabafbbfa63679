// The C API (include/kolo/kolo_c.h) over the C++ one: handles become integers in a
// table, exceptions become kolo_status codes plus a per-thread error message.
#include "kolo/kolo_c.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "devices.h"
#include "handle_state.h"
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
  KOLO_CHECK(dtype >= KOLO_FLOAT32 && dtype <= KOLO_INT16, StatusCode::InvalidArgument,
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

// A group's handles: failed at once (all alike), or all enrolled.
int enroll_group(const std::vector<kolo::Handle>& group, kolo_handle* out) {
  if (group.front().ready()) {
    kolo::Status status = group.front().wait();
    if (!status.ok()) return fail(status);
  }
  std::lock_guard<std::mutex> lock(g_handles_mutex);
  for (std::size_t i = 0; i < group.size(); ++i) {
    out[i] = g_next_handle++;
    g_handles.emplace(out[i], group[i]);
  }
  return KOLO_OK;
}

// A done handle that owns `bytes` as its result (a UInt8 tensor) and `splits`.
kolo_handle enroll_result(const std::string& bytes, std::vector<int64_t> splits) {
  auto state = std::make_shared<kolo::detail::HandleState>();
  state->output_storage.resize(bytes.size());
  if (!bytes.empty()) std::memcpy(state->output_storage.data(), bytes.data(), bytes.size());
  state->output = kolo::TensorView{state->output_storage.data(), kolo::DType::UInt8,
                                   {static_cast<int64_t>(bytes.size())}, kolo::Device::cpu()};
  state->received_splits = std::move(splits);
  state->complete(kolo::Status::OK());
  return enroll(kolo::Handle(std::move(state)));
}

// `count` values copied into `out` (at most `capacity`); the count.
template <typename T>
int copy_out(const std::vector<T>& values, T* out, int capacity) {
  KOLO_CHECK(capacity >= 0 && (capacity == 0 || out != nullptr), StatusCode::InvalidArgument,
             "kolo: capacity must be >= 0, and the array non-null when it is > 0");
  const std::size_t n = std::min(values.size(), static_cast<std::size_t>(capacity));
  for (std::size_t i = 0; i < n; ++i) out[i] = values[i];
  return static_cast<int>(values.size());
}

std::vector<int> int_list(const int* values, int n, const char* what) {
  KOLO_CHECK(n >= 0 && (n == 0 || values != nullptr), StatusCode::InvalidArgument,
             std::string("kolo: ") + what + ": the count must be >= 0, and the array non-null when it is > 0");
  return std::vector<int>(values, values + n);
}

// A group's members: names and views, checked (count >= 1, arrays non-null).
struct Group {
  std::vector<std::string> names;
  std::vector<kolo::TensorView> inputs, outputs;
};

Group make_group(int count, const char* const* names, const void* const* inputs, void* const* outputs,
                 const kolo_dtype& dtype, const int* ndims, const int64_t* const* shapes, int device,
                 bool with_outputs, const kolo_handle* handles) {
  KOLO_CHECK(count >= 1, StatusCode::InvalidArgument, "kolo: a group needs at least one member (count " +
                                                          std::to_string(count) + ")");
  KOLO_CHECK(names != nullptr && inputs != nullptr && ndims != nullptr && shapes != nullptr && handles != nullptr &&
                 (!with_outputs || outputs != nullptr),
             StatusCode::InvalidArgument, "kolo: a group's arrays (names, inputs, outputs, ndims, shapes, handles) must be non-null");
  Group g;
  for (int i = 0; i < count; ++i) {
    g.names.emplace_back(checked_name(names[i]));
    g.inputs.push_back(make_view(inputs[i], dtype, ndims[i], shapes[i], device));
    if (with_outputs) g.outputs.push_back(make_view(outputs[i], dtype, ndims[i], shapes[i], device));
  }
  return g;
}

// Runs a grouped call; on failure every handles[i] gets the status too.
template <typename F>
int grouped(int count, kolo_handle* handles, F&& body) {
  const int status = guarded(std::forward<F>(body));
  if (status != KOLO_OK && handles != nullptr)
    for (int i = 0; i < count; ++i) handles[i] = status;
  return status;
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
  return kolo_allreduce_async_ps(name, input, output, dtype, ndim, shape, op, prescale, postscale, device, 0);
}

kolo_handle kolo_broadcast_async(const char* name, void* buffer, kolo_dtype dtype, int ndim,
                                 const int64_t* shape, int root, int device) {
  return kolo_broadcast_async_ps(name, buffer, dtype, ndim, shape, root, device, 0);
}

kolo_handle kolo_allgather_async(const char* name, const void* input, kolo_dtype dtype, int ndim,
                                 const int64_t* shape, int device) {
  return kolo_allgather_async_ps(name, input, dtype, ndim, shape, device, 0);
}

kolo_handle kolo_alltoall_async(const char* name, const void* input, kolo_dtype dtype, int ndim,
                                const int64_t* shape, const int64_t* splits, int device) {
  return kolo_alltoall_async_ps(name, input, dtype, ndim, shape, splits, device, 0);
}

kolo_handle kolo_reducescatter_async(const char* name, const void* input, kolo_dtype dtype, int ndim,
                                     const int64_t* shape, kolo_op op, int device) {
  return kolo_reducescatter_async_ps(name, input, dtype, ndim, shape, op, 1.0, 1.0, device, 0);
}

// ---- process sets ----

int kolo_init_with_process_sets(const int* ranks, const int* set_sizes, int num_sets) {
  return guarded([&] {
    KOLO_CHECK(num_sets >= 0 && (num_sets == 0 || set_sizes != nullptr), StatusCode::InvalidArgument,
               "kolo: num_sets must be >= 0, and set_sizes non-null when it is > 0");
    std::vector<std::vector<int>> sets;
    int64_t at = 0;
    for (int i = 0; i < num_sets; ++i) {
      KOLO_CHECK(set_sizes[i] >= 0, StatusCode::InvalidArgument,
                 "kolo: process set entry " + std::to_string(i + 1) + " has a negative size " +
                     std::to_string(set_sizes[i]));
      KOLO_CHECK(set_sizes[i] == 0 || ranks != nullptr, StatusCode::InvalidArgument, "kolo: ranks is NULL");
      sets.emplace_back(ranks + at, ranks + at + set_sizes[i]);
      at += set_sizes[i];
    }
    kolo::init(sets);
    return 0;
  });
}

int kolo_add_process_set(const int* ranks, int n) {
  return guarded([&] { return kolo::add_process_set(int_list(ranks, n, "add_process_set")).id(); });
}

int kolo_remove_process_set(int process_set) {
  return guarded([&] { kolo::remove_process_set(kolo::ProcessSet(process_set)); return 0; });
}

int kolo_process_set_ids(int* ids, int capacity) {
  return guarded([&] {
    std::vector<int> all;
    for (const auto& [id, ranks] : kolo::process_sets()) all.push_back(id);
    return copy_out(all, ids, capacity);
  });
}

int kolo_process_set_ranks(int process_set, int* ranks, int capacity) {
  return guarded([&] { return copy_out(kolo::ProcessSet(process_set).ranks(), ranks, capacity); });
}

int kolo_process_set_rank(int process_set) {
  return guarded([&] { return kolo::ProcessSet(process_set).rank(); });
}

int kolo_process_set_size(int process_set) {
  return guarded([&] { return kolo::ProcessSet(process_set).size(); });
}

int kolo_process_set_included(int process_set) {
  return guarded([&] { return kolo::ProcessSet(process_set).included() ? 1 : 0; });
}

kolo_handle kolo_allreduce_async_ps(const char* name, const void* input, void* output, kolo_dtype dtype, int ndim,
                                    const int64_t* shape, kolo_op op, double prescale, double postscale, int device,
                                    int process_set) {
  return guarded([&]() -> kolo_handle {
    kolo::AllreduceOptions options{make_op(op), prescale, postscale};
    options.process_set = kolo::ProcessSet(process_set);
    return enroll(kolo::allreduce_async(checked_name(name), make_view(input, dtype, ndim, shape, device),
                                        make_view(output, dtype, ndim, shape, device), options));
  });
}

kolo_handle kolo_broadcast_async_ps(const char* name, void* buffer, kolo_dtype dtype, int ndim, const int64_t* shape,
                                    int root, int device, int process_set) {
  return guarded([&]() -> kolo_handle {
    return enroll(kolo::broadcast_async(checked_name(name), make_view(buffer, dtype, ndim, shape, device), root,
                                        kolo::ProcessSet(process_set)));
  });
}

kolo_handle kolo_allgather_async_ps(const char* name, const void* input, kolo_dtype dtype, int ndim,
                                    const int64_t* shape, int device, int process_set) {
  return guarded([&]() -> kolo_handle {
    return enroll(kolo::allgather_async(checked_name(name), make_view(input, dtype, ndim, shape, device),
                                        kolo::ProcessSet(process_set)));
  });
}

kolo_handle kolo_alltoall_async_ps(const char* name, const void* input, kolo_dtype dtype, int ndim,
                                   const int64_t* shape, const int64_t* splits, int device, int process_set) {
  return guarded([&]() -> kolo_handle {
    const kolo::ProcessSet set(process_set);
    std::vector<int64_t> s;
    if (splits != nullptr) s.assign(splits, splits + set.size());
    return enroll(kolo::alltoall_async(checked_name(name), make_view(input, dtype, ndim, shape, device), s, set));
  });
}

kolo_handle kolo_reducescatter_async_ps(const char* name, const void* input, kolo_dtype dtype, int ndim,
                                        const int64_t* shape, kolo_op op, double prescale, double postscale,
                                        int device, int process_set) {
  return guarded([&]() -> kolo_handle {
    const kolo::ReducescatterOptions options{make_op(op), prescale, postscale, kolo::ProcessSet(process_set)};
    return enroll(kolo::reducescatter_async(checked_name(name), make_view(input, dtype, ndim, shape, device), options));
  });
}

int kolo_barrier_ps(int process_set) {
  return guarded([&] { kolo::barrier(kolo::ProcessSet(process_set)); return 0; });
}

int kolo_join_ps(int process_set, int* last_rank) {
  return guarded([&] {
    const int last = kolo::join(kolo::ProcessSet(process_set));
    if (last_rank != nullptr) *last_rank = last;
    return 0;
  });
}

// ---- grouped operations ----

int kolo_grouped_allreduce_async(int count, const char* const* names, const void* const* inputs,
                                 void* const* outputs, kolo_dtype dtype, const int* ndims,
                                 const int64_t* const* shapes, kolo_op op, double prescale, double postscale,
                                 int device, int process_set, kolo_handle* handles) {
  return grouped(count, handles, [&] {
    const Group g = make_group(count, names, inputs, outputs, dtype, ndims, shapes, device, true, handles);
    kolo::AllreduceOptions options{make_op(op), prescale, postscale};
    options.process_set = kolo::ProcessSet(process_set);
    return enroll_group(kolo::grouped_allreduce_async(g.names, g.inputs, g.outputs, options), handles);
  });
}

int kolo_grouped_allgather_async(int count, const char* const* names, const void* const* inputs, kolo_dtype dtype,
                                 const int* ndims, const int64_t* const* shapes, int device, int process_set,
                                 kolo_handle* handles) {
  return grouped(count, handles, [&] {
    const Group g = make_group(count, names, inputs, nullptr, dtype, ndims, shapes, device, false, handles);
    return enroll_group(kolo::grouped_allgather_async(g.names, g.inputs, kolo::ProcessSet(process_set)), handles);
  });
}

int kolo_grouped_reducescatter_async(int count, const char* const* names, const void* const* inputs,
                                     kolo_dtype dtype, const int* ndims, const int64_t* const* shapes, kolo_op op,
                                     double prescale, double postscale, int device, int process_set,
                                     kolo_handle* handles) {
  return grouped(count, handles, [&] {
    const Group g = make_group(count, names, inputs, nullptr, dtype, ndims, shapes, device, false, handles);
    const kolo::ReducescatterOptions options{make_op(op), prescale, postscale, kolo::ProcessSet(process_set)};
    return enroll_group(kolo::grouped_reducescatter_async(g.names, g.inputs, options), handles);
  });
}

// ---- byte buffers ----

kolo_handle kolo_broadcast_bytes(const char* name, const void* bytes, int64_t nbytes, int root, int process_set) {
  return guarded([&]() -> kolo_handle {
    const kolo::ProcessSet set(process_set);
    std::string mine;
    if (kolo::rank() == root) {
      KOLO_CHECK(nbytes >= 0 && (nbytes == 0 || bytes != nullptr), StatusCode::InvalidArgument,
                 "kolo: broadcast_bytes: nbytes must be >= 0, and bytes non-null when it is > 0");
      mine.assign(static_cast<const char*>(bytes), static_cast<std::size_t>(nbytes));
    }
    const std::string result = kolo::broadcast_bytes(checked_name(name), mine, root, set);
    return enroll_result(result, {});
  });
}

kolo_handle kolo_allgather_bytes(const char* name, const void* bytes, int64_t nbytes, int process_set) {
  return guarded([&]() -> kolo_handle {
    KOLO_CHECK(nbytes >= 0 && (nbytes == 0 || bytes != nullptr), StatusCode::InvalidArgument,
               "kolo: allgather_bytes: nbytes must be >= 0, and bytes non-null when it is > 0");
    const std::string mine(static_cast<const char*>(bytes), static_cast<std::size_t>(nbytes));
    const std::vector<std::string> all = kolo::allgather_bytes(checked_name(name), mine, kolo::ProcessSet(process_set));
    std::string joined;
    std::vector<int64_t> sizes;
    for (const std::string& part : all) {
      joined += part;
      sizes.push_back(static_cast<int64_t>(part.size()));
    }
    return enroll_result(joined, std::move(sizes));
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

int kolo_received_splits(kolo_handle h, int64_t* splits, int capacity) {
  kolo::Handle handle;
  if (!lookup(h, handle)) return unknown_handle(h);
  if (!handle.ready()) return KOLO_PENDING;
  return guarded([&] { return copy_out(handle.received_splits(), splits, capacity); });
}

int kolo_wait_output(kolo_handle h, void* output, int64_t output_bytes, int64_t* first_dim) {
  kolo::Handle handle;
  if (!lookup(h, handle)) return unknown_handle(h);
  const kolo::Status status = handle.wait();
  if (!status.ok()) {
    release(h);
    return fail(status);
  }
  const kolo::TensorView result = handle.output();
  const bool has_result = result.data != nullptr || !result.shape.empty();
  // A buffer that cannot take the result leaves the handle, so that the caller can ask again.
  if (has_result && (static_cast<int64_t>(result.num_bytes()) > output_bytes ||
                     (result.num_bytes() > 0 && output == nullptr)))
    return fail(kolo::Status(StatusCode::InvalidArgument,
                             "kolo: result has " + std::to_string(result.num_bytes()) + " bytes but the buffer " +
                                 (output == nullptr ? std::string("is NULL") :
                                                      "holds " + std::to_string(output_bytes)) +
                                 " (the handle stays: ask again with a larger buffer)"));
  release(h);
  return guarded([&] {
    KOLO_CHECK(has_result, StatusCode::InvalidArgument,
               "kolo: handle " + std::to_string(h) +
                   " has no result to copy (only allgather, alltoall and reducescatter have one)");
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

int kolo_barrier(void) { return kolo_barrier_ps(0); }
int kolo_join(void) { return kolo_join_ps(0, nullptr); }

int kolo_start_timeline(const char* path, int mark_cycles) {
  return guarded([&] {
    KOLO_CHECK(path != nullptr, StatusCode::InvalidArgument, "kolo: timeline path is NULL");
    kolo::start_timeline(path, mark_cycles != 0);
    return 0;
  });
}

int kolo_stop_timeline(void) {
  return guarded([] { kolo::stop_timeline(); return 0; });
}

int kolo_mpi_built(void) { return kolo::mpi_built() ? 1 : 0; }
int kolo_nccl_built(void) { return guarded([] { return kolo::nccl_built(); }); }
int kolo_cuda_built(void) { return guarded([] { return kolo::cuda_built() ? 1 : 0; }); }
int kolo_mpi_threads_supported(void) { return guarded([] { return kolo::mpi_threads_supported() ? 1 : 0; }); }
int kolo_is_homogeneous(void) { return guarded([] { return kolo::is_homogeneous() ? 1 : 0; }); }

const char* kolo_error_message(void) { return t_last_error.c_str(); }
const char* kolo_last_error(void) { return kolo_error_message(); }

}  // extern "C"
