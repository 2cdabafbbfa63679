// The public C++ API (include/kolo/kolo.h): argument checks that need no other rank,
// then a hand-off to the Runtime's queue.
#include <mutex>
#include <thread>

#include "gpu_state.h"
#include "kolo/kolo.h"
#include "logging.h"
#include "runtime.h"

namespace kolo {
namespace {

std::mutex g_mutex;  // guards g_runtime's creation and destruction
std::unique_ptr<Runtime> g_runtime;

Runtime& runtime() {
  if (!g_runtime) throw Error(StatusCode::InvalidArgument, "kolo is not initialised: call kolo::init() first");
  return *g_runtime;
}

Handle failed(StatusCode code, const std::string& message) {
  auto state = std::make_shared<detail::HandleState>();
  state->complete(Status(code, message));
  return Handle(state);
}

// Checks that the caller's view is usable; returns an error message or "".
std::string check_view(const std::string& name, const TensorView& view, const char* role) {
  for (int64_t d : view.shape)
    if (d < 0) return "kolo: " + std::string(role) + " of '" + name + "' has a negative dimension " + shape_string(view.shape);
  if (view.data == nullptr && view.num_elements() > 0)
    return "kolo: " + std::string(role) + " of '" + name + "' has no data (null pointer)";
  if (!view.device.is_cpu() && view.num_elements() > 0)
    if (std::string problem = runtime().devices().check(view); !problem.empty())
      return "kolo: " + std::string(role) + " of '" + name + "' is on cuda:" + std::to_string(view.device.index) +
             ", but " + problem;
  return "";
}

// A GPU tensor's handle carries the event that says it is ready: recorded now, on the
// calling thread's stream, so that the collective waits for its producer on the device.
void attach_gpu(TensorEntry& entry) {
  if (entry.request.device.is_cpu()) return;
  auto gpu = std::make_shared<detail::GpuState>();
  gpu->ready = runtime().devices().record_ready(entry.request.device);
  entry.handle.gpu = std::move(gpu);
}

Handle submit(EntryPtr entry) {
  try {
    attach_gpu(*entry);
  } catch (const Error& e) {
    return failed(StatusCode::InvalidArgument, "kolo: tensor '" + entry->request.name + "': " + e.what());
  }
  Handle handle(handle_of(entry));
  if (Status status = runtime().submit(std::move(entry)); !status.ok())
    return failed(status.code(), status.message());
  return handle;
}

EntryPtr make_entry(const std::string& name, OpType type, const TensorView& input, void* output) {
  auto e = std::make_shared<TensorEntry>();
  Request& r = e->request;
  r.name = name;
  r.type = type;
  r.dtype = input.dtype;
  r.device = input.device;
  r.shape.assign(input.shape);
  e->input = input.data;
  e->output = output;
  return e;
}

// An allreduce's separate output must match its input.
std::string check_same_layout(const std::string& name, const TensorView& input, const TensorView& output) {
  if (input.dtype != output.dtype)
    return "kolo: allreduce of '" + name + "': input is " + dtype_name(input.dtype) + " but output is " + dtype_name(output.dtype);
  if (input.num_elements() != output.num_elements())
    return "kolo: allreduce of '" + name + "': input has " + std::to_string(input.num_elements()) +
           " elements but output has " + std::to_string(output.num_elements());
  if (input.device != output.device)
    return "kolo: allreduce of '" + name + "': input and output are on different devices";
  return "";
}

// Returns an error message if the allreduce arguments are unusable, else "".
std::string check_allreduce(const std::string& name, const TensorView& input, const TensorView& output,
                            const AllreduceOptions& options) {
  if (name.empty()) return "kolo: a tensor name must not be empty";
  if (auto e = check_view(name, input, "input"); !e.empty()) return e;
  if (&output != &input) {  // in place (the common case): nothing more to compare
    if (auto e = check_view(name, output, "output"); !e.empty()) return e;
    if (auto e = check_same_layout(name, input, output); !e.empty()) return e;
  }
  if (options.compression != Compression::None && !is_floating_point(input.dtype))
    return "kolo: allreduce of '" + name + "': " + compression_name(options.compression) +
           " compression needs a floating-point dtype, not " + dtype_name(input.dtype);
  if (!is_floating_point(input.dtype) &&
      (options.op == ReduceOp::Average || options.prescale != 1.0 || options.postscale != 1.0))
    return "kolo: allreduce of '" + name + "': average and pre/postscale need a floating-point dtype, not " +
           dtype_name(input.dtype) + " (use sum and divide)";
  return "";
}

EntryPtr allreduce_entry(const std::string& name, const TensorView& input, const TensorView& output,
                         const AllreduceOptions& options) {
  EntryPtr e = make_entry(name, OpType::Allreduce, input, output.data);
  e->request.op = options.op;
  e->request.prescale = options.prescale;
  e->request.postscale = options.postscale;
  e->request.compression = options.compression;
  return e;
}

}  // namespace

// ---- Handle -----------------------------------------------------------------------------

bool Handle::ready() const {
  return !state_ || state_->is_done();
}

void detail::note_caller_waits() {
  if (g_runtime) g_runtime->caller_waits();
}

namespace {

// Sleeps at once rather than polling: with a core per rank (mpirun's default binding) a
// polling caller would take the core from the background thread that completes it.
Status wait_until(detail::HandleState& state, std::optional<std::chrono::steady_clock::time_point> deadline) {
  if (!state.is_done()) {
    detail::note_caller_waits();
    if (!state.wait_until(deadline)) return Status(StatusCode::Pending, "kolo: operation still running");
  }
  return state.status;
}

}  // namespace

Status Handle::wait() const {
  if (!state_) return Status(StatusCode::InvalidArgument, "kolo: wait() on an empty handle");
  return wait_until(*state_, std::nullopt);
}

Status Handle::wait_for(std::chrono::milliseconds timeout) const {
  if (!state_) return Status(StatusCode::InvalidArgument, "kolo: wait_for() on an empty handle");
  return wait_until(*state_, std::chrono::steady_clock::now() + timeout);
}

TensorView Handle::output() const {
  if (!state_ || !state_->is_done()) return {};
  return state_->output;
}

const std::vector<int64_t>& Handle::received_splits() const {
  static const std::vector<int64_t> none;
  if (!state_ || !state_->is_done()) return none;
  return state_->received_splits;
}

// ---- lifetime -----------------------------------------------------------------------------

namespace {

void start(MPI_Comm comm, bool owns_mpi, const Config& config) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  set_log_rank(rank);  // before the Runtime, which reports ignored settings as it starts
  g_runtime = std::make_unique<Runtime>(comm, config, owns_mpi);
  if (g_runtime->context().rank() == 0) KOLO_LOG(Debug) << "configuration:\n" << config.describe();
}

void require_thread_multiple() {
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_MULTIPLE)
    throw Error(StatusCode::InvalidArgument,
                "kolo: MPI was initialised without MPI_THREAD_MULTIPLE (thread level " +
                    std::to_string(provided) +
                    "), but kolo's background thread makes MPI calls while the program runs: "
                    "initialise MPI with MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided), "
                    "or let kolo::init() initialise it");
}

}  // namespace

void init() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_runtime) return;
  const Config config = config_from_environment();
  set_log_level(config.log_level);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized) throw Error(StatusCode::InvalidArgument, "kolo: MPI has already been finalised; kolo cannot start again");
  bool owns_mpi = false;
  if (!initialized) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
      throw Error(StatusCode::CommFailure, "kolo: MPI_Init_thread failed");
    owns_mpi = true;
  }
  require_thread_multiple();
  start(MPI_COMM_WORLD, owns_mpi, config);
}

void init(MPI_Comm comm) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_runtime) return;
  const Config config = config_from_environment();
  set_log_level(config.log_level);
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized)
    throw Error(StatusCode::InvalidArgument, "kolo: init(MPI_Comm) needs MPI to be initialised by the program");
  if (comm == MPI_COMM_NULL)
    throw Error(StatusCode::InvalidArgument,
                "kolo: init(MPI_Comm) was given MPI_COMM_NULL (is this rank outside the split?)");
  require_thread_multiple();
  start(comm, false, config);
}

void shutdown() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_runtime) return;
  const bool owns_mpi = g_runtime->owns_mpi();
  g_runtime.reset();  // joins the thread and frees the communicator
  if (owns_mpi) MPI_Finalize();
}

bool is_initialized() { return g_runtime != nullptr; }
void copy_gpu_result(void* dst, const TensorView& result) { runtime().devices().copy_result(dst, result); }
int rank() { return runtime().context().rank(); }
int size() { return runtime().context().size(); }
int local_rank() { return runtime().context().local_rank(); }
int local_size() { return runtime().context().local_size(); }
int cross_rank() { return runtime().context().cross_rank(); }
int cross_size() { return runtime().context().cross_size(); }
std::string describe_configuration() { return runtime().config().describe(); }

// ---- collectives ---------------------------------------------------------------------------

Handle allreduce_async(const std::string& name, const TensorView& input, const TensorView& output,
                       const AllreduceOptions& options) {
  runtime();
  if (auto e = check_allreduce(name, input, output, options); !e.empty())
    return failed(StatusCode::InvalidArgument, e);
  return submit(allreduce_entry(name, input, output, options));
}

Handle allreduce_async(const std::string& name, const TensorView& inout, const AllreduceOptions& options) {
  return allreduce_async(name, inout, inout, options);
}

std::vector<Handle> grouped_allreduce_async(const std::vector<std::string>& names,
                                            const std::vector<TensorView>& inputs,
                                            const std::vector<TensorView>& outputs,
                                            const AllreduceOptions& options) {
  runtime();
  auto all_failed = [&](const std::string& message) {
    return std::vector<Handle>(std::max<std::size_t>(names.size(), 1),
                               failed(StatusCode::InvalidArgument, message));
  };
  if (names.empty() || names.size() != inputs.size() || names.size() != outputs.size())
    return all_failed("kolo: grouped allreduce needs as many names, inputs and outputs (and at least one)");
  std::vector<EntryPtr> entries;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (auto e = check_allreduce(names[i], inputs[i], outputs[i], options); !e.empty()) return all_failed(e);
    entries.push_back(allreduce_entry(names[i], inputs[i], outputs[i], options));
    entries.back()->request.group = names.front();
    entries.back()->request.group_size = static_cast<int32_t>(names.size());
    try {
      attach_gpu(*entries.back());
    } catch (const Error& e) {
      return all_failed("kolo: tensor '" + names[i] + "': " + e.what());
    }
  }
  std::vector<Handle> handles;
  for (const EntryPtr& e : entries) handles.emplace_back(handle_of(e));
  Status status = runtime().submit(std::move(entries));
  if (!status.ok()) return all_failed(status.message());
  return handles;
}

Handle allgather_async(const std::string& name, const TensorView& input) {
  runtime();
  if (auto e = check_view(name, input, "input"); !e.empty()) return failed(StatusCode::InvalidArgument, e);
  if (input.shape.empty())
    return failed(StatusCode::InvalidArgument, "kolo: allgather of '" + name + "' needs at least one dimension (got a scalar)");
  return submit(make_entry(name, OpType::Allgather, input, nullptr));
}

Handle broadcast_async(const std::string& name, const TensorView& buffer, int root) {
  runtime();
  if (auto e = check_view(name, buffer, "buffer"); !e.empty()) return failed(StatusCode::InvalidArgument, e);
  if (root < 0 || root >= size())
    return failed(StatusCode::InvalidArgument, "kolo: broadcast of '" + name + "': root " + std::to_string(root) +
                                                   " is not a rank (size " + std::to_string(size()) + ")");
  EntryPtr e = make_entry(name, OpType::Broadcast, buffer, buffer.data);
  e->request.root = root;
  return submit(std::move(e));
}

Handle alltoall_async(const std::string& name, const TensorView& input, const std::vector<int64_t>& splits) {
  runtime();
  if (auto e = check_view(name, input, "input"); !e.empty()) return failed(StatusCode::InvalidArgument, e);
  if (input.shape.empty())
    return failed(StatusCode::InvalidArgument, "kolo: alltoall of '" + name + "' needs at least one dimension");
  const int64_t rows = input.shape[0];
  std::vector<int64_t> s = splits;
  if (s.empty()) {
    if (rows % size() != 0)
      return failed(StatusCode::InvalidArgument, "kolo: alltoall of '" + name + "': first dimension " + std::to_string(rows) +
                                                     " does not divide by " + std::to_string(size()) + " ranks; pass splits");
    s.assign(size(), rows / size());
  }
  int64_t total = 0;
  for (int64_t x : s) total += x < 0 ? rows + 1 : x;
  if (static_cast<int>(s.size()) != size() || total != rows)
    return failed(StatusCode::InvalidArgument, "kolo: alltoall of '" + name + "': splits must be " + std::to_string(size()) +
                                                   " non-negative row counts that add up to " + std::to_string(rows));
  EntryPtr e = make_entry(name, OpType::Alltoall, input, nullptr);
  e->splits = std::move(s);
  return submit(std::move(e));
}

Handle reducescatter_async(const std::string& name, const TensorView& input, ReduceOp op) {
  runtime();
  if (auto e = check_view(name, input, "input"); !e.empty()) return failed(StatusCode::InvalidArgument, e);
  if (input.shape.empty())
    return failed(StatusCode::InvalidArgument, "kolo: reducescatter of '" + name + "' needs at least one dimension");
  if (op == ReduceOp::Average && !is_floating_point(input.dtype))
    return failed(StatusCode::InvalidArgument, "kolo: reducescatter of '" + name + "': average needs a floating-point dtype, not " +
                                                   dtype_name(input.dtype));
  EntryPtr e = make_entry(name, OpType::Reducescatter, input, nullptr);
  e->request.op = op;
  return submit(std::move(e));
}

void allreduce(const std::string& name, const TensorView& inout, const AllreduceOptions& options) {
  allreduce_async(name, inout, options).wait().throw_if_error();
}

void broadcast(const std::string& name, const TensorView& buffer, int root) {
  broadcast_async(name, buffer, root).wait().throw_if_error();
}

void barrier() {
  runtime();
  auto e = std::make_shared<TensorEntry>();
  e->request.name = "kolo.barrier";
  e->request.type = OpType::Barrier;
  e->request.shape = {0};
  submit(std::move(e)).wait().throw_if_error();
}

void join() {
  Handle(runtime().join()).wait().throw_if_error();
}

}  // namespace kolo
