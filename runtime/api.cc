// The public C++ API (include/kolo/kolo.h): argument checks that need no other rank,
// then a hand-off to the Runtime's queue.
#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <sstream>
#include <string_view>
#include <thread>

#include "gpu_state.h"
#include "heap_tuning.h"
#include "kolo/elastic.h"
#include "kolo/kolo_mpi.h"
#include "logging.h"
#include "gloo_job.h"
#include "mpi_transport.h"
#if KOLO_WITH_GLOO
#include "gloo_transport.h"
#endif
#include "process_sets.h"
#include "watchdog.h"

namespace kolo {
namespace {

std::mutex g_lifecycle;  // init() and shutdown(), one at a time

// The process sets of init(). Every call takes its own reference for as long as it runs:
// shutdown() on another thread cannot free them under it. A mutex rather than
// std::atomic<std::shared_ptr>: GCC 12's libstdc++ unlocks in its load() with a relaxed
// store, so a load() and a later exchange() race in C++'s memory model, and TSan reports
// them.
class GlobalSets {
 public:
  std::shared_ptr<ProcessSets> load() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return sets_;
  }
  std::shared_ptr<ProcessSets> exchange(std::shared_ptr<ProcessSets> sets) {
    std::lock_guard<std::mutex> lock(mutex_);
    sets_.swap(sets);
    return sets;
  }

 private:
  mutable std::mutex mutex_;  // held only to copy or swap the pointer
  std::shared_ptr<ProcessSets> sets_;
};
GlobalSets g_sets;
bool g_kolo_initialised_mpi = false;  // so kolo finalises it, even after an init() that failed
bool g_owns_mpi = false;              // the running kolo finalises MPI at shutdown
int64_t g_last_gloo_round = 0;        // a Gloo job's last round this process was part of
bool g_gloo_running = false;          // the running kolo is on Gloo
thread_local ProcessSets* t_sets = nullptr;  // bind_thread_to()

// The process sets this thread's calls reach, or null.
std::shared_ptr<ProcessSets> current() {
  if (t_sets != nullptr) return std::shared_ptr<ProcessSets>(std::shared_ptr<ProcessSets>(), t_sets);  // not owned
  return g_sets.load();
}

std::shared_ptr<ProcessSets> sets() {
  if (std::shared_ptr<ProcessSets> s = current()) return s;
  throw Error(StatusCode::InvalidArgument, "kolo is not initialised: call kolo::init() first");
}

// The global set's runtime, kept alive by the reference to its process sets.
std::shared_ptr<Runtime> runtime() {
  std::shared_ptr<ProcessSets> s = sets();
  Runtime* global = &s->global();
  return std::shared_ptr<Runtime>(std::move(s), global);
}

Handle failed(Status status) {
  auto state = std::make_shared<detail::HandleState>();
  state->complete(std::move(status));
  return Handle(state);
}

Handle failed(StatusCode code, const std::string& message) { return failed(Status(code, message)); }

// A group's handles, all failed with `status` (one, for a group with no members).
std::vector<Handle> failed_group(std::size_t members, Status status) {
  return std::vector<Handle>(std::max<std::size_t>(members, 1), failed(std::move(status)));
}

Status invalid(std::string message) { return Status(StatusCode::InvalidArgument, std::move(message)); }

// The runtime of `set` for this call, kept alive with its process sets, or null with
// `why_not` (a set that does not exist, or one this rank is not in).
std::shared_ptr<Runtime> runtime_of(const ProcessSet& set, Status& why_not) {
  if (set.id() == 0) return runtime();  // the common case, without an allocation per call
  std::shared_ptr<ProcessSets> s = sets();
  std::shared_ptr<Runtime> r = s->runtime(set.id(), why_not);
  if (!r) return nullptr;
  Runtime* raw = r.get();
  // Owns both: the set's runtime (a removed set's lives on for this call) and the sets.
  auto both = std::make_shared<std::pair<std::shared_ptr<ProcessSets>, std::shared_ptr<Runtime>>>(std::move(s),
                                                                                                  std::move(r));
  return std::shared_ptr<Runtime>(std::move(both), raw);
}

// Checks that the caller's view is usable: OK, or why not (InvalidArgument; Unsupported for
// a GPU tensor in a build without GPU support).
Status check_view(Runtime& rt, const std::string& name, const TensorView& view, const char* role) {
  // The coordinator takes a shape whose product overflows for a damaged message, and ends the
  // job (message.cc): refused here, for this call alone. Its bytes must be countable too.
  int64_t elements = 1, bytes = 0;
  for (int64_t d : view.shape) {
    if (d < 0)
      return invalid("kolo: " + std::string(role) + " of '" + name + "' has a negative dimension " +
                     shape_string(view.shape));
    if (__builtin_mul_overflow(elements, d, &elements))
      return invalid("kolo: " + std::string(role) + " of '" + name + "' has the shape " + shape_string(view.shape) +
                     ", of more elements than 64 bits count");
  }
  if (__builtin_mul_overflow(elements, static_cast<int64_t>(dtype_size(view.dtype)), &bytes))
    return invalid("kolo: " + std::string(role) + " of '" + name + "' has the shape " + shape_string(view.shape) +
                   ", of more bytes than 64 bits count");
  if (view.data == nullptr && view.num_elements() > 0)
    return invalid("kolo: " + std::string(role) + " of '" + name + "' has no data (null pointer)");
  if (!view.device.is_cpu() && view.num_elements() > 0)
    if (Status problem = rt.devices().check(view); !problem.ok())
      return Status(problem.code(), "kolo: " + std::string(role) + " of '" + name + "' is on cuda:" +
                                        std::to_string(view.device.index) + ", but " + problem.message());
  return Status::OK();
}

// A GPU tensor's handle carries the event that says it is ready: recorded now, on the
// calling thread's stream, so that the collective waits for its producer on the device.
void attach_gpu(Runtime& rt, TensorEntry& entry) {
  if (entry.request.device.is_cpu()) return;
  auto gpu = std::make_shared<detail::GpuState>();
  gpu->ready = rt.devices().record_ready(entry.request.device);
  entry.handle.gpu = std::move(gpu);
}

Handle submit(Runtime& rt, EntryPtr entry) {
  try {
    attach_gpu(rt, *entry);
  } catch (const Error& e) {
    return failed(e.code(), "kolo: tensor '" + entry->request.name + "': " + e.what());
  }
  Handle handle(handle_of(entry));
  if (Status status = rt.submit(std::move(entry)); !status.ok())
    return failed(status);
  return handle;
}

// Members of a group are negotiated together: none runs before all are ready on every
// rank. The group's key is its first member's name.
std::vector<Handle> submit_group(Runtime& rt, std::vector<EntryPtr> entries) {
  const std::size_t members = entries.size();  // entries is moved into the queue below
  auto all_failed = [members](Status status) { return failed_group(members, std::move(status)); };
  for (EntryPtr& e : entries) {
    e->request.group = entries.front()->request.name;
    e->request.group_size = static_cast<int32_t>(entries.size());
    try {
      attach_gpu(rt, *e);
    } catch (const Error& error) {
      return all_failed(Status(error.code(), "kolo: tensor '" + e->request.name + "': " + error.what()));
    }
  }
  std::vector<Handle> handles;
  for (const EntryPtr& e : entries) handles.emplace_back(handle_of(e));
  if (Status status = rt.submit(std::move(entries)); !status.ok()) return all_failed(status);
  return handles;
}

// An empty name gets the set's next automatic one for the operation's type.
EntryPtr make_entry(Runtime& rt, const std::string& name, OpType type, const TensorView& input, void* output) {
  auto e = std::make_shared<TensorEntry>();
  Request& r = e->request;
  r.name = name.empty() ? rt.automatic_name(type) : name;
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

// An op or compression outside its enum (an int from Python or C, op=99) is refused here:
// on the wire the coordinator would take it for a damaged message and end the job.
Status check_known(const char* what, const std::string& name, ReduceOp op, Compression compression) {
  if (std::string_view(op_name(op)) == "unknown")
    return invalid("kolo: " + std::string(what) + " of '" + name + "': unknown reduction op " +
                   std::to_string(static_cast<int>(op)));
  if (std::string_view(compression_name(compression)) == "unknown")
    return invalid("kolo: " + std::string(what) + " of '" + name + "': unknown compression " +
                   std::to_string(static_cast<int>(compression)));
  return Status::OK();
}

// Adasum (docs/adasum.md): float16/32/64 CPU tensors, a power-of-two number of ranks (of
// the process set).
Status check_adasum(Runtime& rt, const std::string& name, const TensorView& input, const AllreduceOptions& options) {
  const std::string what = "kolo: allreduce of '" + name + "': Adasum";
  if (input.dtype != DType::Float16 && input.dtype != DType::Float32 && input.dtype != DType::Float64)
    return invalid(what + " needs float16, float32 or float64, not " + dtype_name(input.dtype));
  if (const int n = rt.transport().size(); (n & (n - 1)) != 0)
    return invalid(what + " needs a power-of-two number of ranks, and this " +
                   (options.process_set.id() == 0 ? std::string("job") : "process set") + " has " + std::to_string(n));
  if (!input.device.is_cpu())
    return Status(StatusCode::Unsupported, what + " runs on CPU tensors only in this version; this one is on cuda:" +
                                               std::to_string(input.device.index));
  if (options.compression == Compression::BF16)
    return invalid(what + " with bf16 compression is not supported (fp16 compression is)");
  return Status::OK();
}

// OK if the allreduce arguments are usable, else why not.
Status check_allreduce(Runtime& rt, const std::string& name, const TensorView& input, const TensorView& output,
                       const AllreduceOptions& options) {
  if (Status s = check_view(rt, name, input, "input"); !s.ok()) return s;
  if (Status s = check_known("allreduce", name, options.op, options.compression); !s.ok()) return s;
  if (&output != &input) {  // in place (the common case): nothing more to compare
    if (Status s = check_view(rt, name, output, "output"); !s.ok()) return s;
    if (auto e = check_same_layout(name, input, output); !e.empty()) return invalid(e);
  }
  if (options.compression != Compression::None && !is_floating_point(input.dtype))
    return invalid("kolo: allreduce of '" + name + "': " + compression_name(options.compression) +
                   " compression needs a floating-point dtype, not " + dtype_name(input.dtype));
  if (options.op == ReduceOp::Adasum) return check_adasum(rt, name, input, options);
  return Status::OK();
}

EntryPtr allreduce_entry(Runtime& rt, const std::string& name, const TensorView& input, const TensorView& output,
                         const AllreduceOptions& options) {
  EntryPtr e = make_entry(rt, name, OpType::Allreduce, input, output.data);
  e->request.op = options.op;
  e->request.prescale = options.prescale;
  e->request.postscale = options.postscale;
  e->request.compression = options.compression;
  return e;
}

Status check_allgather(Runtime& rt, const std::string& name, const TensorView& input) {
  if (Status s = check_view(rt, name, input, "input"); !s.ok()) return s;
  if (input.shape.empty())
    return invalid("kolo: allgather of '" + name + "' needs at least one dimension (got a scalar)");
  return Status::OK();
}

Status check_reducescatter(Runtime& rt, const std::string& name, const TensorView& input,
                           const ReducescatterOptions& options) {
  if (Status s = check_view(rt, name, input, "input"); !s.ok()) return s;
  if (input.shape.empty()) return invalid("kolo: reducescatter of '" + name + "' needs at least one dimension");
  if (Status s = check_known("reducescatter", name, options.op, Compression::None); !s.ok()) return s;
  if (options.op == ReduceOp::Adasum)
    return invalid("kolo: reducescatter of '" + name + "': reducescatter does not support Adasum (as in Horovod)");
  return Status::OK();
}

EntryPtr reducescatter_entry(Runtime& rt, const std::string& name, const TensorView& input,
                             const ReducescatterOptions& options) {
  EntryPtr e = make_entry(rt, name, OpType::Reducescatter, input, nullptr);
  e->request.op = options.op;
  e->request.prescale = options.prescale;
  e->request.postscale = options.postscale;
  return e;
}

}  // namespace

// ---- Handle -----------------------------------------------------------------------------

bool Handle::ready() const {
  return !state_ || state_->is_done();
}

// A caller may wait on any set's operation: every runtime of this rank starts its cycle.
void detail::note_caller_waits() {
  if (ProcessSets* s = t_sets) return s->caller_waits();
  if (std::shared_ptr<ProcessSets> s = g_sets.load()) s->caller_waits();
}

void bind_thread_to(ProcessSets* sets) { t_sets = sets; }

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
  // A timeout past the clock's range (milliseconds::max(), a common "for ever") waits for ever
  // instead of overflowing into a deadline in the past.
  const auto now = std::chrono::steady_clock::now();
  const auto longest = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::time_point::max() - now);
  if (timeout >= longest) return wait_until(*state_, std::nullopt);
  return wait_until(*state_, now + timeout);
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
  if (std::shared_ptr<ProcessSets> s = g_sets.load(); s && s->failed()) s->end_job_after_failure();
}

// Ends the process with kolo's FATAL line (`why`, then the exit code) unless cancel() comes
// within `bound`: for the waits around MPI_Finalize, which no watchdog covers any more. The
// timer's thread is detached and shares the state, so a process that exits while it waits
// just ends it.
class ExitTimer {
 public:
  ExitTimer(std::chrono::milliseconds bound, std::string why) : state_(std::make_shared<State>()) {
    std::thread([state = state_, bound, why = std::move(why)] {
      std::unique_lock<std::mutex> lock(state->mutex);
      if (state->cancelled_or_done.wait_for(lock, bound, [&] { return state->cancelled; })) return;
      KOLO_LOG(Fatal) << why << "; ending the job (exit code " << kJobFailedExitCode << ")";
      std::fflush(nullptr);
      std::_Exit(kJobFailedExitCode);
    }).detach();
  }
  void cancel() {
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      state_->cancelled = true;
    }
    state_->cancelled_or_done.notify_all();
  }

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable cancelled_or_done;
    bool cancelled = false;
  };
  std::shared_ptr<State> state_;
};

std::string seconds_of(std::chrono::milliseconds bound) {
  std::ostringstream text;
  text << std::chrono::duration<double>(bound).count() << " s";
  return text.str();
}

// A rank whose kolo the other ranks shut down (their shutdown round) and that never calls
// kolo::shutdown() is hung (in the program's own teardown, say). Under mpirun the others'
// MPI_Finalize waits for it, ends after KOLO_CONTROL_TIMEOUT_SECONDS (finalize_within), and
// mpirun ends this rank. Under srun their MPI_Finalize returns at once (PMIx) and nothing
// would end it: srun would wait for ever. So it ends itself, after twice that timeout: not
// at the moment the others end (mpirun 4.1 was seen to hang when every rank of a job exits
// at once, some inside MPI_Finalize). Only where kolo finalises MPI (as finalize_within).
// After a stall, whatever the transport and whoever finalises MPI: there a rank stuck in
// the program's own code is the likely cause, and no one else would end it (kolorun --gloo
// waits for every worker; a program that finalises MPI itself waits in MPI_Finalize).
std::mutex g_deadline_mutex;
bool g_deadline_armed = false;               // from start() to shutdown(): a late call starts nothing
std::optional<ExitTimer> g_finalize_deadline;  // running once kolo has stopped without this rank's shutdown()

void start_finalize_deadline(std::chrono::milliseconds bound, const std::string& why) {
  std::lock_guard<std::mutex> lock(g_deadline_mutex);
  if (!g_deadline_armed || g_finalize_deadline) return;
  g_finalize_deadline.emplace(bound, why);
}

void start_deadline_after_stop(const Status& why, std::chrono::milliseconds control_timeout, bool finalises_mpi) {
  const bool stall = why.code() == StatusCode::Stalled;
  if (!stall && !finalises_mpi) return;
  const std::chrono::milliseconds bound = 2 * control_timeout;
  start_finalize_deadline(bound, std::string(stall ? "kolo: a stall shut kolo down on every rank "
                                                   : "kolo: the other ranks shut kolo down ") +
                                     seconds_of(bound) +
                                     " ago (twice KOLO_CONTROL_TIMEOUT_SECONDS), but this rank has not called "
                                     "kolo::shutdown() (" +
                                     (stall ? "stuck in the program's own code?" : "hung after its last collective?") +
                                     ")");
}

void reach_finalize_deadline() {
  std::lock_guard<std::mutex> lock(g_deadline_mutex);
  g_deadline_armed = false;
  if (g_finalize_deadline) g_finalize_deadline->cancel();
  g_finalize_deadline.reset();
}

void start(std::unique_ptr<Transport> transport, const Config& config,
           const std::vector<std::vector<int>>& process_sets) {
  const int rank = transport->rank();
  set_log_rank(rank);  // before the Runtime, which reports ignored settings as it starts
  {
    std::lock_guard<std::mutex> lock(g_deadline_mutex);
    g_deadline_armed = true;
  }
  const std::chrono::milliseconds finalize_bound = config.control_timeout();
  const bool finalises_mpi = g_kolo_initialised_mpi;
  auto s = std::make_shared<ProcessSets>(std::move(transport), config, steady_clock(), process_sets,
                                         [finalize_bound, finalises_mpi](const Status& why) {
                                           start_deadline_after_stop(why, finalize_bound, finalises_mpi);
                                         });
  if (rank == 0) KOLO_LOG(Debug) << "configuration:\n" << config.describe();
  if (config.keep_freed_memory) {
    const std::string what = detail::keep_freed_memory();
    if (rank == 0) KOLO_LOG(Info) << "KOLO_KEEP_FREED_MEMORY: malloc " << what;
  }
  g_owns_mpi = g_kolo_initialised_mpi;
  g_sets.exchange(std::move(s));
  static const bool registered = std::atexit(end_job_if_failed) == 0;
  (void)registered;
}

// Until calls still running on other threads let go of `s` (each holds it for one call).
void wait_for_last_reference(const std::shared_ptr<ProcessSets>& s) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (s.use_count() > 1 && std::chrono::steady_clock::now() < give_up)
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

// init() on a running kolo does nothing, as Horovod's does; but a static set it would have to
// add must not pass for added.
void require_running_sets(const ProcessSets& running, const std::vector<std::vector<int>>& wanted) {
  const std::map<int, std::vector<int>> table = running.table();
  for (std::vector<int> ranks : wanted) {
    std::sort(ranks.begin(), ranks.end());
    const std::string listed = shape_string(Shape(std::vector<int64_t>(ranks.begin(), ranks.end())));
    const bool running_already = std::any_of(table.begin(), table.end(), [&](const auto& entry) {
      return entry.first != 0 && entry.second == ranks;  // the global set is never a static set
    });
    if (!running_already)
      throw Error(StatusCode::InvalidArgument,
                  "kolo: init() with the process set " + listed +
                      ", but kolo is already running without it: call kolo::shutdown() first, or add it with "
                      "add_process_set() (KOLO_DYNAMIC_PROCESS_SETS=1)");
  }
}

}  // namespace

void init() { init(std::vector<std::vector<int>>{}); }

void init(const std::vector<std::vector<int>>& process_sets) {
  std::lock_guard<std::mutex> lock(g_lifecycle);
  if (std::shared_ptr<ProcessSets> running = g_sets.load()) return require_running_sets(*running, process_sets);
  const Config config = config_from_environment();
  set_log_level(config.log_level);
  if (std::optional<GlooJob> job = gloo_job_from_environment()) {
    // A Gloo job (kolorun --gloo, or elastic): no MPI. A re-init after a reset joins the
    // job's next round.
#if KOLO_WITH_GLOO
    auto transport = std::make_unique<GlooTransport>(*job, g_last_gloo_round, config);
    start(std::move(transport), config, process_sets);
    g_gloo_running = true;
    return;
#else
    throw Error(StatusCode::Unsupported,
                "kolo: this worker belongs to a Gloo job (KOLO_GLOO_RENDEZVOUS_ADDR is set: kolorun --gloo, or an "
                "elastic kolorun), but this build of kolo has no Gloo transport (configured without libgloo-dev, or "
                "with KOLO_GLOO=OFF)");
#endif
  }
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized) throw Error(StatusCode::InvalidArgument, "kolo: MPI has already been finalised; kolo cannot start again");
  if (!initialized) {
    // kolo's background thread waits in MPI beside the program's computing thread: with
    // Open MPI's default busy polling, two busy threads per rank take a core from the
    // computation whenever the ranks fill the cores (ResNet-18 weak scaling at np 2 on 2
    // cores: 0.71 polling, 0.89 yielding; docs/perf.md). So where kolo starts MPI, Open MPI
    // yields while it waits, unless the launch says otherwise (`--mca mpi_yield_when_idle 0`
    // or OMPI_MCA_mpi_yield_when_idle=0 keeps the polling).
    ::setenv("OMPI_MCA_mpi_yield_when_idle", "1", /*overwrite=*/0);
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
      throw Error(StatusCode::CommFailure, "kolo: MPI_Init_thread failed");
    g_kolo_initialised_mpi = true;
  }
  require_thread_multiple();
  start(std::make_unique<MpiTransport>(MPI_COMM_WORLD, config, steady_clock()), config, process_sets);
  g_gloo_running = false;
}

void init(MPI_Comm comm) { init(comm, {}); }

void init(MPI_Comm comm, const std::vector<std::vector<int>>& process_sets) {
  std::lock_guard<std::mutex> lock(g_lifecycle);
  if (std::shared_ptr<ProcessSets> running = g_sets.load()) return require_running_sets(*running, process_sets);
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
  start(std::make_unique<MpiTransport>(comm, config, steady_clock()), config, process_sets);
}

namespace {

// MPI_Finalize is collective: a rank that hangs after kolo's shutdown round (in the
// program's own teardown, say) would hold this one in it for ever, with no watchdog left.
// It gets `bound` (the control timeout); then this rank ends the job with the watchdog's
// exit code. (MPI_Abort may not be called once MPI_Finalize has begun: the process exits,
// and mpirun, or kolorun, ends the others.) After a stall the likely late rank is one the
// stall left in the program's own code, which never reaches kolo::shutdown(): the line
// says so, with the stall's reason (`stall_reason`; empty: no stall).
void finalize_within(std::chrono::milliseconds bound, const std::string& stall_reason) {
  const std::string waited_for =
      stall_reason.empty()
          ? "ranks that left kolo's shutdown round but never finalised MPI (hung after kolo::shutdown()?)"
          : "ranks that never finalised MPI: " + stall_reason +
                " (a rank that skipped the tensor may still be in the program's own code, never reaching "
                "kolo::shutdown())";
  ExitTimer timer(bound, "kolo: MPI_Finalize waited " + seconds_of(bound) + " (KOLO_CONTROL_TIMEOUT_SECONDS) for " +
                             waited_for);
  const int code = MPI_Finalize();
  timer.cancel();
  // Only the code: no MPI call (MPI_Error_string) is allowed after MPI_Finalize.
  if (code != MPI_SUCCESS) KOLO_LOG(Error) << "kolo: MPI_Finalize failed with MPI error code " << code;
}

}  // namespace

// After a failure that ends the job, shutdown() ends it at once: MPI_Finalize is
// collective and would wait for ranks that no longer answer (watchdog.h).
void shutdown() {
  std::lock_guard<std::mutex> lock(g_lifecycle);
  std::shared_ptr<ProcessSets> s = g_sets.exchange(nullptr);
  if (!s) return;
  reach_finalize_deadline();  // from here finalize_within bounds what is left
  if (s->failed()) s->end_job_after_failure();
  s->shutdown();  // stops the background threads: later calls fail as shut down
  if (s->failed()) s->end_job_after_failure();  // a last cycle found a rank gone
  const std::chrono::milliseconds finalize_bound = s->global().config().control_timeout();
  // Read with the background thread stopped: the caller may get here as soon as the stalled
  // operation's handle fails, before the thread has finished that cycle.
  const std::string stall_reason = s->global().stall_message().value_or("");
  wait_for_last_reference(s);
  s.reset();  // frees the communicators
  if (g_owns_mpi) {
    finalize_within(finalize_bound, stall_reason);
    g_owns_mpi = g_kolo_initialised_mpi = false;
  }
}

bool is_initialized() { return g_sets.load() != nullptr; }

// kolo/elastic.h: here, where the running kolo is.
bool elastic::stopped_by_other_ranks() {
  const std::shared_ptr<ProcessSets> s = current();
  return s && s->stopped_by_other_ranks();
}
void copy_gpu_result(void* dst, const TensorView& result) { runtime()->devices().copy_result(dst, result); }
int rank() { return runtime()->transport().rank(); }
int size() { return runtime()->transport().size(); }
int local_rank() { return runtime()->transport().topology().local_rank; }
int local_size() { return runtime()->transport().topology().local_size; }
int cross_rank() { return runtime()->transport().topology().cross_rank; }
int cross_size() { return runtime()->transport().topology().cross_size; }
bool is_homogeneous() { return runtime()->transport().topology().homogeneous; }
std::string describe_configuration() { return runtime()->config().describe(); }

bool mpi_built() { return true; }
bool gloo_built() { return build_info().gloo; }
bool gloo_enabled() { return is_initialized() && g_gloo_running; }
bool mpi_enabled() { return is_initialized() && !g_gloo_running; }
int64_t current_gloo_round() { return g_gloo_running ? g_last_gloo_round : 0; }
int nccl_built() { return build_info().nccl_version_code; }
bool cuda_built() { return build_info().cuda; }
bool mpi_threads_supported() {
  KOLO_CHECK(!gloo_enabled(), StatusCode::InvalidArgument,
             "kolo: mpi_threads_supported() asks about MPI, which this job does not run on: it runs over Gloo "
             "(kolorun --gloo, or an elastic job)");
  int initialized = 0, provided = MPI_THREAD_SINGLE;
  MPI_Initialized(&initialized);
  if (!initialized) throw Error(StatusCode::InvalidArgument, "kolo: mpi_threads_supported() needs MPI: call kolo::init() first");
  MPI_Query_thread(&provided);
  return provided == MPI_THREAD_MULTIPLE;
}

// ---- process sets ----------------------------------------------------------------------------

std::map<int, std::vector<int>> process_sets() { return sets()->table(); }

std::vector<int> ProcessSet::ranks() const {
  std::optional<std::vector<int>> ranks = sets()->ranks(id_);
  if (!ranks) throw Error(StatusCode::InvalidArgument, "kolo: there is no process set " + std::to_string(id_));
  return *ranks;
}

int ProcessSet::size() const { return static_cast<int>(ranks().size()); }

int ProcessSet::rank() const {
  const std::vector<int> members = ranks();
  const auto it = std::find(members.begin(), members.end(), kolo::rank());
  return it == members.end() ? -1 : static_cast<int>(it - members.begin());
}

bool ProcessSet::included() const { return rank() >= 0; }

namespace {

// Adds (ranks) or removes (id) a process set: an operation of the global set, run by its
// background thread (process_sets.h).
int change_process_set(const std::vector<int>& ranks, int removed_id) {
  std::shared_ptr<Runtime> rt = runtime();
  const char* call = removed_id < 0 ? "add_process_set" : "remove_process_set";
  if (!rt->config().dynamic_process_sets)
    throw Error(StatusCode::InvalidArgument, "kolo: " + std::string(call) +
                                                 "() needs dynamic process sets: set KOLO_DYNAMIC_PROCESS_SETS=1 "
                                                 "(or HOROVOD_DYNAMIC_PROCESS_SETS=1) on every rank");
  auto e = std::make_shared<TensorEntry>();
  e->request.name = "kolo.process_set_change." + std::to_string(rt->next_unnamed(OpType::ProcessSet));
  e->request.type = OpType::ProcessSet;
  e->request.process_set_change =
      removed_id < 0 ? ProcessSetChange{ProcessSetChange::Action::Add, std::vector<int32_t>(ranks.begin(), ranks.end()), 0}
                     : ProcessSetChange{ProcessSetChange::Action::Remove, {}, removed_id};
  std::shared_ptr<detail::HandleState> state = handle_of(e);
  rt->submit(std::move(e)).throw_if_error();
  Handle(state).wait().throw_if_error();
  return static_cast<int>(state->value);
}

}  // namespace

ProcessSet add_process_set(const std::vector<int>& ranks) {
  const int size = kolo::size();
  std::vector<std::vector<int>> checked = checked_process_sets({ranks}, size);
  return ProcessSet(change_process_set(checked.front(), -1));
}

void remove_process_set(const ProcessSet& set) {
  if (set.id() == 0) throw Error(StatusCode::InvalidArgument, "kolo: the global process set (id 0) cannot be removed");
  change_process_set({}, set.id());
}

// ---- collectives ---------------------------------------------------------------------------

Handle allreduce_async(const std::string& name, const TensorView& input, const TensorView& output,
                       const AllreduceOptions& options) {
  Status why_not;
  std::shared_ptr<Runtime> rt = runtime_of(options.process_set, why_not);
  if (!rt) return failed(why_not);
  if (Status s = check_allreduce(*rt, name, input, output, options); !s.ok()) return failed(s);
  return submit(*rt, allreduce_entry(*rt, name, input, output, options));
}

Handle allreduce_async(const std::string& name, const TensorView& inout, const AllreduceOptions& options) {
  return allreduce_async(name, inout, inout, options);
}

std::vector<Handle> grouped_allreduce_async(const std::vector<std::string>& names,
                                            const std::vector<TensorView>& inputs,
                                            const std::vector<TensorView>& outputs,
                                            const AllreduceOptions& options) {
  auto all_failed = [&](Status status) { return failed_group(names.size(), std::move(status)); };
  Status why_not;
  std::shared_ptr<Runtime> rt = runtime_of(options.process_set, why_not);
  if (!rt) return all_failed(why_not);
  if (names.empty() || names.size() != inputs.size() || names.size() != outputs.size())
    return all_failed(
        invalid("kolo: grouped allreduce needs as many names, inputs and outputs (and at least one)"));
  std::vector<EntryPtr> entries;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (Status s = check_allreduce(*rt, names[i], inputs[i], outputs[i], options); !s.ok()) return all_failed(s);
    entries.push_back(allreduce_entry(*rt, names[i], inputs[i], outputs[i], options));
  }
  return submit_group(*rt, std::move(entries));
}

Handle allgather_async(const std::string& name, const TensorView& input, const ProcessSet& set) {
  Status why_not;
  std::shared_ptr<Runtime> rt = runtime_of(set, why_not);
  if (!rt) return failed(why_not);
  if (Status s = check_allgather(*rt, name, input); !s.ok()) return failed(s);
  return submit(*rt, make_entry(*rt, name, OpType::Allgather, input, nullptr));
}

std::vector<Handle> grouped_allgather_async(const std::vector<std::string>& names,
                                            const std::vector<TensorView>& inputs, const ProcessSet& set) {
  auto all_failed = [&](Status status) { return failed_group(names.size(), std::move(status)); };
  Status why_not;
  std::shared_ptr<Runtime> rt = runtime_of(set, why_not);
  if (!rt) return all_failed(why_not);
  if (names.empty() || names.size() != inputs.size())
    return all_failed(invalid("kolo: grouped allgather needs as many names as inputs (and at least one)"));
  std::vector<EntryPtr> entries;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (Status s = check_allgather(*rt, names[i], inputs[i]); !s.ok()) return all_failed(s);
    entries.push_back(make_entry(*rt, names[i], OpType::Allgather, inputs[i], nullptr));
  }
  return submit_group(*rt, std::move(entries));
}

Handle broadcast_async(const std::string& name, const TensorView& buffer, int root, const ProcessSet& set) {
  Status why_not;
  std::shared_ptr<Runtime> rt = runtime_of(set, why_not);
  if (!rt) return failed(why_not);
  if (Status s = check_view(*rt, name, buffer, "buffer"); !s.ok()) return failed(s);
  if (rt->set_rank(root) < 0)
    return failed(StatusCode::InvalidArgument,
                  "kolo: broadcast of '" + name + "': root " + std::to_string(root) +
                      (set.id() == 0 ? " is not a rank (size " + std::to_string(rt->transport().size()) + ")"
                                     : " is not a rank of process set " + std::to_string(set.id())));
  EntryPtr e = make_entry(*rt, name, OpType::Broadcast, buffer, buffer.data);
  e->request.root = root;
  return submit(*rt, std::move(e));
}

Handle alltoall_async(const std::string& name, const TensorView& input, const std::vector<int64_t>& splits,
                      const ProcessSet& set) {
  Status why_not;
  std::shared_ptr<Runtime> rt = runtime_of(set, why_not);
  if (!rt) return failed(why_not);
  if (Status s = check_view(*rt, name, input, "input"); !s.ok()) return failed(s);
  if (input.shape.empty())
    return failed(StatusCode::InvalidArgument, "kolo: alltoall of '" + name + "' needs at least one dimension");
  const int size = rt->transport().size();
  const int64_t rows = input.shape[0];
  std::vector<int64_t> s = splits;
  if (s.empty()) {
    if (rows % size != 0)
      return failed(StatusCode::InvalidArgument, "kolo: alltoall of '" + name + "': first dimension " + std::to_string(rows) +
                                                     " does not divide by " + std::to_string(size) + " ranks; pass splits");
    s.assign(size, rows / size);
  }
  // Each split is taken from the rows left, so that no sum of huge splits can wrap around.
  bool splits_fit = static_cast<int>(s.size()) == size;
  int64_t rows_left = rows;
  for (int64_t x : s) {
    splits_fit = splits_fit && x >= 0 && x <= rows_left;
    if (splits_fit) rows_left -= x;
  }
  if (!splits_fit || rows_left != 0)
    return failed(StatusCode::InvalidArgument, "kolo: alltoall of '" + name + "': splits must be " + std::to_string(size) +
                                                   " non-negative row counts that add up to " + std::to_string(rows));
  EntryPtr e = make_entry(*rt, name, OpType::Alltoall, input, nullptr);
  e->splits = std::move(s);
  return submit(*rt, std::move(e));
}

Handle reducescatter_async(const std::string& name, const TensorView& input, const ReducescatterOptions& options) {
  Status why_not;
  std::shared_ptr<Runtime> rt = runtime_of(options.process_set, why_not);
  if (!rt) return failed(why_not);
  if (Status s = check_reducescatter(*rt, name, input, options); !s.ok()) return failed(s);
  return submit(*rt, reducescatter_entry(*rt, name, input, options));
}

Handle reducescatter_async(const std::string& name, const TensorView& input, ReduceOp op) {
  ReducescatterOptions options;
  options.op = op;
  return reducescatter_async(name, input, options);
}

std::vector<Handle> grouped_reducescatter_async(const std::vector<std::string>& names,
                                                const std::vector<TensorView>& inputs,
                                                const ReducescatterOptions& options) {
  auto all_failed = [&](Status status) { return failed_group(names.size(), std::move(status)); };
  Status why_not;
  std::shared_ptr<Runtime> rt = runtime_of(options.process_set, why_not);
  if (!rt) return all_failed(why_not);
  if (names.empty() || names.size() != inputs.size())
    return all_failed(invalid("kolo: grouped reducescatter needs as many names as inputs (and at least one)"));
  std::vector<EntryPtr> entries;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (Status s = check_reducescatter(*rt, names[i], inputs[i], options); !s.ok()) return all_failed(s);
    entries.push_back(reducescatter_entry(*rt, names[i], inputs[i], options));
  }
  return submit_group(*rt, std::move(entries));
}

void allreduce(const std::string& name, const TensorView& inout, const AllreduceOptions& options) {
  allreduce_async(name, inout, options).wait().throw_if_error();
}

void broadcast(const std::string& name, const TensorView& buffer, int root, const ProcessSet& set) {
  broadcast_async(name, buffer, root, set).wait().throw_if_error();
}

void barrier(const ProcessSet& set) {
  Status why_not;
  std::shared_ptr<Runtime> rt = runtime_of(set, why_not);
  why_not.throw_if_error();
  auto e = std::make_shared<TensorEntry>();
  e->request.name = "kolo.barrier";
  e->request.type = OpType::Barrier;
  e->request.shape = {0};
  submit(*rt, std::move(e)).wait().throw_if_error();
}

int join(const ProcessSet& set) {
  Status why_not;
  std::shared_ptr<Runtime> rt = runtime_of(set, why_not);
  why_not.throw_if_error();
  std::shared_ptr<detail::HandleState> state = rt->join();
  Handle(state).wait().throw_if_error();
  return static_cast<int>(state->value);
}

// ---- byte buffers ------------------------------------------------------------------------------

namespace {

TensorView bytes_view(std::string& bytes) {
  return TensorView{bytes.data(), DType::UInt8, {static_cast<int64_t>(bytes.size())}, Device::cpu()};
}

// The name both steps of a byte-buffer operation derive theirs from.
std::string bytes_name(const std::string& name, OpType type, const ProcessSet& set) {
  if (!name.empty()) return name;
  Status why_not;
  std::shared_ptr<Runtime> rt = runtime_of(set, why_not);
  why_not.throw_if_error();
  return rt->automatic_name(type);
}

}  // namespace

// Two steps: the size, then the bytes (the other ranks cannot know the size beforehand).
// The sizes are other ranks' words, checked before they size or index anything.
std::string broadcast_bytes(const std::string& name, const std::string& bytes, int root, const ProcessSet& set) {
  const std::string base = bytes_name(name, OpType::Broadcast, set);
  std::vector<int64_t> size = {static_cast<int64_t>(bytes.size())};
  broadcast(base + ".size", view(size), root, set);
  KOLO_CHECK(size[0] >= 0, StatusCode::Mismatch,
             "kolo: broadcast_bytes of '" + base + "': rank " + std::to_string(root) + " sent a size of " +
                 std::to_string(size[0]) + " bytes");
  std::string result = rank() == root ? bytes : std::string(static_cast<std::size_t>(size[0]), '\0');
  broadcast(base + ".bytes", bytes_view(result), root, set);
  return result;
}

// Two steps: every rank's size, then the bytes, concatenated in rank order.
std::vector<std::string> allgather_bytes(const std::string& name, const std::string& bytes, const ProcessSet& set) {
  const std::string base = bytes_name(name, OpType::Allgather, set);
  std::vector<int64_t> mine = {static_cast<int64_t>(bytes.size())};
  Handle sizes = allgather_async(base + ".size", view(mine), set);
  sizes.wait().throw_if_error();
  std::string copy = bytes;
  Handle data = allgather_async(base + ".bytes", bytes_view(copy), set);
  data.wait().throw_if_error();
  const TensorView all_sizes = sizes.output();
  const TensorView all_bytes = data.output();
  const auto damaged = [&](const std::string& why) {
    return Error(StatusCode::Mismatch, "kolo: allgather_bytes of '" + base + "': " + why);
  };
  if (all_sizes.dtype != DType::Int64) throw damaged("the sizes arrived as " + std::string(dtype_name(all_sizes.dtype)));
  std::vector<std::string> result;
  const int64_t arrived = all_bytes.num_elements();
  int64_t at = 0;
  for (int64_t r = 0; r < all_sizes.num_elements(); ++r) {
    const int64_t n = static_cast<const int64_t*>(all_sizes.data)[r];
    if (n < 0 || n > arrived - at)
      throw damaged("rank " + std::to_string(r) + " claims " + std::to_string(n) + " bytes, but " +
                    std::to_string(arrived - at) + " of the " + std::to_string(arrived) + " that arrived are left");
    result.emplace_back(static_cast<const char*>(all_bytes.data) + at, static_cast<std::size_t>(n));
    at += n;
  }
  if (at != arrived)
    throw damaged("the ranks' sizes add up to " + std::to_string(at) + " bytes, but " + std::to_string(arrived) +
                  " arrived");
  return result;
}

// ---- timeline ----------------------------------------------------------------------------------

void start_timeline(const std::string& path, bool mark_cycles) {
  std::shared_ptr<ProcessSets> s = sets();
  const Runtime& global = s->global();
  const int rank = global.transport().rank();
  const std::optional<std::string> file = timeline_file_of(path, rank);
  if (!file) return s->timeline().close();  // rank 0 writes the new one; this rank's ends too
  s->timeline().open(*file, rank, global.clock().now(), mark_cycles || global.config().timeline_mark_cycles);
}

void stop_timeline() { sets()->timeline().close(); }

}  // namespace kolo
