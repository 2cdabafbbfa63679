// The public C++ API (include/kolo/kolo.h): argument checks that need no other rank,
// then a hand-off to the Runtime's queue.
#include <cstdlib>
#include <mutex>
#include <thread>

#include "gpu_state.h"
#include "kolo/kolo_mpi.h"
#include "logging.h"
#include "mpi_transport.h"
#include "runtime.h"

namespace kolo {
namespace {

std::mutex g_lifecycle;  // init() and shutdown(), one at a time

// The runtime of init(). Every call takes its own reference for as long as it runs:
// shutdown() on another thread cannot free the runtime under it. A mutex rather than
// std::atomic<std::shared_ptr>: GCC 12's libstdc++ unlocks in its load() with a relaxed
// store, so a load() and a later exchange() race in C++'s memory model, and TSan reports
// them.
class GlobalRuntime {
 public:
  std::shared_ptr<Runtime> load() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return runtime_;
  }
  std::shared_ptr<Runtime> exchange(std::shared_ptr<Runtime> runtime) {
    std::lock_guard<std::mutex> lock(mutex_);
    runtime_.swap(runtime);
    return runtime;
  }

 private:
  mutable std::mutex mutex_;  // held only to copy or swap the pointer
  std::shared_ptr<Runtime> runtime_;
};
GlobalRuntime g_runtime;
bool g_owns_mpi = false;  // kolo initialised MPI and finalises it at shutdown
thread_local Runtime* t_runtime = nullptr;  // bind_thread_to()

// The runtime this thread's calls reach, or null.
std::shared_ptr<Runtime> current() {
  if (t_runtime != nullptr) return std::shared_ptr<Runtime>(std::shared_ptr<Runtime>(), t_runtime);  // not owned
  return g_runtime.load();
}

std::shared_ptr<Runtime> runtime() {
  if (std::shared_ptr<Runtime> r = current()) return r;
  throw Error(StatusCode::InvalidArgument, "kolo is not initialised: call kolo::init() first");
}

Handle failed(Status status) {
  auto state = std::make_shared<detail::HandleState>();
  state->complete(std::move(status));
  return Handle(state);
}

Handle failed(StatusCode code, const std::string& message) { return failed(Status(code, message)); }

Status invalid(std::string message) { return Status(StatusCode::InvalidArgument, std::move(message)); }

// Checks that the caller's view is usable: OK, or why not (InvalidArgument; Unsupported for
// a GPU tensor in a build without GPU support).
Status check_view(const std::string& name, const TensorView& view, const char* role) {
  for (int64_t d : view.shape)
    if (d < 0)
      return invalid("kolo: " + std::string(role) + " of '" + name + "' has a negative dimension " +
                     shape_string(view.shape));
  if (view.data == nullptr && view.num_elements() > 0)
    return invalid("kolo: " + std::string(role) + " of '" + name + "' has no data (null pointer)");
  if (!view.device.is_cpu() && view.num_elements() > 0)
    if (Status problem = runtime()->devices().check(view); !problem.ok())
      return Status(problem.code(), "kolo: " + std::string(role) + " of '" + name + "' is on cuda:" +
                                        std::to_string(view.device.index) + ", but " + problem.message());
  return Status::OK();
}

// A GPU tensor's handle carries the event that says it is ready: recorded now, on the
// calling thread's stream, so that the collective waits for its producer on the device.
void attach_gpu(TensorEntry& entry) {
  if (entry.request.device.is_cpu()) return;
  auto gpu = std::make_shared<detail::GpuState>();
  gpu->ready = runtime()->devices().record_ready(entry.request.device);
  entry.handle.gpu = std::move(gpu);
}

Handle submit(EntryPtr entry) {
  try {
    attach_gpu(*entry);
  } catch (const Error& e) {
    return failed(e.code(), "kolo: tensor '" + entry->request.name + "': " + e.what());
  }
  Handle handle(handle_of(entry));
  if (Status status = runtime()->submit(std::move(entry)); !status.ok())
    return failed(status);
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

// Adasum (docs/adasum.md): float16/32/64 CPU tensors, a power-of-two number of ranks.
Status check_adasum(const std::string& name, const TensorView& input, const AllreduceOptions& options) {
  const std::string what = "kolo: allreduce of '" + name + "': Adasum";
  if (input.dtype != DType::Float16 && input.dtype != DType::Float32 && input.dtype != DType::Float64)
    return invalid(what + " needs float16, float32 or float64, not " + dtype_name(input.dtype));
  if (const int n = runtime()->transport().size(); (n & (n - 1)) != 0)
    return invalid(what + " needs a power-of-two number of ranks, and this job has " + std::to_string(n));
  if (!input.device.is_cpu())
    return Status(StatusCode::Unsupported, what + " runs on CPU tensors only in this version; this one is on cuda:" +
                                               std::to_string(input.device.index));
  if (options.compression == Compression::BF16)
    return invalid(what + " with bf16 compression is not supported (fp16 compression is)");
  return Status::OK();
}

// OK if the allreduce arguments are usable, else why not.
Status check_allreduce(const std::string& name, const TensorView& input, const TensorView& output,
                       const AllreduceOptions& options) {
  if (name.empty()) return invalid("kolo: a tensor name must not be empty");
  if (Status s = check_view(name, input, "input"); !s.ok()) return s;
  if (&output != &input) {  // in place (the common case): nothing more to compare
    if (Status s = check_view(name, output, "output"); !s.ok()) return s;
    if (auto e = check_same_layout(name, input, output); !e.empty()) return invalid(e);
  }
  if (options.compression != Compression::None && !is_floating_point(input.dtype))
    return invalid("kolo: allreduce of '" + name + "': " + compression_name(options.compression) +
                   " compression needs a floating-point dtype, not " + dtype_name(input.dtype));
  if (!is_floating_point(input.dtype) &&
      (options.op == ReduceOp::Average || options.prescale != 1.0 || options.postscale != 1.0))
    return invalid("kolo: allreduce of '" + name + "': average and pre/postscale need a floating-point dtype, not " +
                   dtype_name(input.dtype) + " (use sum and divide)");
  if (options.op == ReduceOp::Adasum) return check_adasum(name, input, options);
  return Status::OK();
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
  if (std::shared_ptr<Runtime> r = current()) r->caller_waits();
}

void bind_thread_to(Runtime* runtime) { t_runtime = runtime; }

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

// A program that saw kolo's error and returns from main (or calls exit) ends the job now,
// instead of leaving the other ranks to kolo's grace time, or MPI to wait for them.
void end_job_if_failed() {
  if (std::shared_ptr<Runtime> r = g_runtime.load(); r && r->failed()) r->end_job_after_failure();
}

void start(MPI_Comm comm, bool owns_mpi, const Config& config) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  set_log_rank(rank);  // before the Runtime, which reports ignored settings as it starts
  auto r = std::make_shared<Runtime>(std::make_unique<MpiTransport>(comm, config, steady_clock()), config,
                                     steady_clock());
  if (r->transport().rank() == 0) KOLO_LOG(Debug) << "configuration:\n" << config.describe();
  g_owns_mpi = owns_mpi;
  g_runtime.exchange(std::move(r));
  static const bool registered = std::atexit(end_job_if_failed) == 0;
  (void)registered;
}

// Until calls still running on other threads let go of `r` (each holds it for one call).
void wait_for_last_reference(const std::shared_ptr<Runtime>& r) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (r.use_count() > 1 && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
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
  std::lock_guard<std::mutex> lock(g_lifecycle);
  if (g_runtime.load()) return;
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
  std::lock_guard<std::mutex> lock(g_lifecycle);
  if (g_runtime.load()) return;
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

// After a failure that ends the job, shutdown() ends it at once: MPI_Finalize is
// collective and would wait for ranks that no longer answer (watchdog.h).
void shutdown() {
  std::lock_guard<std::mutex> lock(g_lifecycle);
  std::shared_ptr<Runtime> r = g_runtime.exchange(nullptr);
  if (!r) return;
  if (r->failed()) r->end_job_after_failure();
  r->shutdown();  // stops the background thread: later calls on r fail as shut down
  if (r->failed()) r->end_job_after_failure();  // its last cycle found a rank gone
  wait_for_last_reference(r);
  r.reset();  // frees the communicator
  if (g_owns_mpi) MPI_Finalize();
}

bool is_initialized() { return g_runtime.load() != nullptr; }
void copy_gpu_result(void* dst, const TensorView& result) { runtime()->devices().copy_result(dst, result); }
int rank() { return runtime()->transport().rank(); }
int size() { return runtime()->transport().size(); }
int local_rank() { return runtime()->transport().topology().local_rank; }
int local_size() { return runtime()->transport().topology().local_size; }
int cross_rank() { return runtime()->transport().topology().cross_rank; }
int cross_size() { return runtime()->transport().topology().cross_size; }
std::string describe_configuration() { return runtime()->config().describe(); }

// ---- collectives ---------------------------------------------------------------------------

Handle allreduce_async(const std::string& name, const TensorView& input, const TensorView& output,
                       const AllreduceOptions& options) {
  runtime();
  if (Status s = check_allreduce(name, input, output, options); !s.ok()) return failed(s);
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
  auto all_failed = [&](Status status) {
    return std::vector<Handle>(std::max<std::size_t>(names.size(), 1), failed(std::move(status)));
  };
  if (names.empty() || names.size() != inputs.size() || names.size() != outputs.size())
    return all_failed(
        invalid("kolo: grouped allreduce needs as many names, inputs and outputs (and at least one)"));
  std::vector<EntryPtr> entries;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (Status s = check_allreduce(names[i], inputs[i], outputs[i], options); !s.ok()) return all_failed(s);
    entries.push_back(allreduce_entry(names[i], inputs[i], outputs[i], options));
    entries.back()->request.group = names.front();
    entries.back()->request.group_size = static_cast<int32_t>(names.size());
    try {
      attach_gpu(*entries.back());
    } catch (const Error& e) {
      return all_failed(Status(e.code(), "kolo: tensor '" + names[i] + "': " + e.what()));
    }
  }
  std::vector<Handle> handles;
  for (const EntryPtr& e : entries) handles.emplace_back(handle_of(e));
  Status status = runtime()->submit(std::move(entries));
  if (!status.ok()) return all_failed(status);
  return handles;
}

Handle allgather_async(const std::string& name, const TensorView& input) {
  runtime();
  if (Status s = check_view(name, input, "input"); !s.ok()) return failed(s);
  if (input.shape.empty())
    return failed(StatusCode::InvalidArgument, "kolo: allgather of '" + name + "' needs at least one dimension (got a scalar)");
  return submit(make_entry(name, OpType::Allgather, input, nullptr));
}

Handle broadcast_async(const std::string& name, const TensorView& buffer, int root) {
  runtime();
  if (Status s = check_view(name, buffer, "buffer"); !s.ok()) return failed(s);
  if (root < 0 || root >= size())
    return failed(StatusCode::InvalidArgument, "kolo: broadcast of '" + name + "': root " + std::to_string(root) +
                                                   " is not a rank (size " + std::to_string(size()) + ")");
  EntryPtr e = make_entry(name, OpType::Broadcast, buffer, buffer.data);
  e->request.root = root;
  return submit(std::move(e));
}

Handle alltoall_async(const std::string& name, const TensorView& input, const std::vector<int64_t>& splits) {
  runtime();
  if (Status s = check_view(name, input, "input"); !s.ok()) return failed(s);
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
  if (Status s = check_view(name, input, "input"); !s.ok()) return failed(s);
  if (input.shape.empty())
    return failed(StatusCode::InvalidArgument, "kolo: reducescatter of '" + name + "' needs at least one dimension");
  if (op == ReduceOp::Average && !is_floating_point(input.dtype))
    return failed(StatusCode::InvalidArgument, "kolo: reducescatter of '" + name + "': average needs a floating-point dtype, not " +
                                                   dtype_name(input.dtype));
  if (op == ReduceOp::Adasum)
    return failed(StatusCode::InvalidArgument,
                  "kolo: reducescatter of '" + name + "': reducescatter does not support Adasum (as in Horovod)");
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
  Handle(runtime()->join()).wait().throw_if_error();
}

}  // namespace kolo
