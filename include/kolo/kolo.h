// kolo — data-parallel training runtime over MPI, in the family of Horovod.
//
// The whole public C++ API of the runtime. A background thread per rank owns every
// collective: callers enqueue named operations and get a Handle back at once; the
// thread negotiates with the other ranks which names are ready everywhere, fuses
// small tensors, and runs the collectives in the same order on every rank.
//
//   kolo::init();
//   kolo::Handle h = kolo::allreduce_async("grad/w", kolo::view(w_grad));
//   ... more work ...
//   h.wait().throw_if_error();
//   kolo::shutdown();
//
// Errors never hang and never abort inside a library call: an operation that cannot
// run fails its Handle with a Status whose message names the tensor, what differs and
// on which ranks. Configuration comes from the environment (KOLO_*, or the HOROVOD_*
// alias); see docs/configuration.md.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace kolo {

// ---- Element types and reductions ---------------------------------------------------

// Int16 comes last so that the earlier values, which travel in messages, keep their numbers.
enum class DType : int { Float32, Float64, Float16, BFloat16, Int8, UInt8, Int32, Int64, Int16 };
// Adasum: the adaptive summation of Maleki et al. (Horovod's op=hvd.Adasum), for
// float16/32/64 CPU tensors on a power-of-two number of ranks (docs/adasum.md).
enum class ReduceOp : int { Sum, Average, Min, Max, Product, Adasum };

std::size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);   // "float32", "bfloat16", ...
const char* op_name(ReduceOp op);      // "sum", "average", ..., "adasum"
bool is_floating_point(DType dtype);

// Where a tensor's memory lives. CUDA tensors need a build with CUDA (see build_info());
// a process keeps its GPU tensors on one device. See docs/gpu.md.
struct Device {
  enum class Kind : int { CPU, CUDA };
  Kind kind = Kind::CPU;
  int index = -1;  // CUDA device ordinal; -1 for the CPU

  static Device cpu() { return {}; }
  static Device cuda(int ordinal) { return {Kind::CUDA, ordinal}; }
  bool is_cpu() const { return kind == Kind::CPU; }
  bool operator==(const Device&) const = default;
};

// A borrowed tensor: kolo reads and writes `data` but never owns or frees it. The
// memory must stay valid until the operation's Handle is done.
struct TensorView {
  void* data = nullptr;
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;  // {} is a scalar (one element)
  Device device = Device::cpu();

  int64_t num_elements() const;
  std::size_t num_bytes() const { return static_cast<std::size_t>(num_elements()) * dtype_size(dtype); }
};

template <typename T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::Float32; }
template <> constexpr DType dtype_of<double>() { return DType::Float64; }
template <> constexpr DType dtype_of<int8_t>() { return DType::Int8; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::UInt8; }
template <> constexpr DType dtype_of<int16_t>() { return DType::Int16; }
template <> constexpr DType dtype_of<int32_t>() { return DType::Int32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::Int64; }

// A 1-D view of a vector (or of an explicit shape over its storage).
template <typename T>
TensorView view(std::vector<T>& v, std::vector<int64_t> shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(v.size())};
  return TensorView{v.data(), dtype_of<T>(), std::move(shape), Device::cpu()};
}

// ---- Status, errors, handles ----------------------------------------------------------

enum class StatusCode : int {
  Ok = 0,
  Pending,          // wait_for() timed out; the operation is still running
  InvalidArgument,  // rejected on this rank before it was enqueued
  Mismatch,         // ranks submitted the same name with different shape/dtype/op/...
  Stalled,          // not submitted by every rank within KOLO_STALL_SHUTDOWN_TIME_SECONDS (kolo then
                    // shuts down on every rank: later operations fail with Stalled too)
  Aborted,          // kolo was shut down before the operation ran
  CommFailure,      // the communication backend reported an error
  IoError,          // a file or other operating-system resource could not be read, written or made
  DeviceError,      // the GPU (CUDA) reported an error
  Internal,         // kolo broke one of its own invariants: a bug in kolo, please report it
  Unsupported,      // valid, but this build or this version of kolo cannot do it
};
// "Ok", "InvalidArgument", ...: the enumerator's name.
const char* status_code_name(StatusCode code);

class Error : public std::runtime_error {
 public:
  Error(StatusCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  StatusCode code() const { return code_; }

 private:
  StatusCode code_;
};

class Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status OK() { return {}; }

  bool ok() const { return code_ == StatusCode::Ok; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  void throw_if_error() const {
    if (!ok()) throw Error(code_, message_);
  }

 private:
  StatusCode code_ = StatusCode::Ok;
  std::string message_;
};

namespace detail { struct HandleState; }

// The caller's side of one enqueued operation. Copyable; all copies share the state.
class Handle {
 public:
  Handle() = default;
  explicit Handle(std::shared_ptr<detail::HandleState> state) : state_(std::move(state)) {}

  bool valid() const { return state_ != nullptr; }
  bool ready() const;                                   // never blocks
  Status wait() const;                                  // blocks until done
  Status wait_for(std::chrono::milliseconds timeout) const;  // Pending if not done in time

  // GPU operations: makes `cuda_stream` (a cudaStream_t; nullptr: the legacy default
  // stream) wait on the device until the operation is done, without blocking the host
  // beyond the moment kolo has enqueued it. For a framework that consumes the result on
  // its own stream. A device failure after that shows in wait(). For a CPU operation it
  // is wait().
  Status wait_on_stream(void* cuda_stream) const;

  // For operations whose result size depends on other ranks (allgather, alltoall,
  // reducescatter), the result lives in memory owned by the handle (on the tensor's
  // device); valid after wait().
  TensorView output() const;
  // alltoall only: how many first-dimension rows came from each rank.
  const std::vector<int64_t>& received_splits() const;

 private:
  std::shared_ptr<detail::HandleState> state_;
};

// ---- Process sets ------------------------------------------------------------------------

// A subset of the ranks that runs collectives of its own, concurrently with the other sets
// (Horovod's hvd.ProcessSet). Set 0 is the global set, all ranks. A set is named by its id;
// the queries below ask kolo, which knows every set of the job (docs/process_sets.md).
class ProcessSet {
 public:
  ProcessSet() = default;  // the global set
  explicit ProcessSet(int id) : id_(id) {}
  int id() const { return id_; }
  std::vector<int> ranks() const;  // the set's ranks (of the global set), ascending
  int size() const;
  int rank() const;                // this rank's index within the set; -1 outside it
  bool included() const;           // whether this rank belongs to the set
  bool operator==(const ProcessSet&) const = default;

 private:
  int id_ = 0;
};
inline const ProcessSet global_process_set{};

// ---- Lifetime and topology -------------------------------------------------------------

// Starts kolo on MPI_COMM_WORLD. Initialises MPI (MPI_THREAD_MULTIPLE) unless the program
// already did, in which case kolo leaves MPI_Finalize to the program and checks that the
// program's thread level is MPI_THREAD_MULTIPLE. Throws kolo::Error on failure.
void init();
// The same with static process sets: each a list of ranks (in any order), given alike on
// every rank. They get ids 1, 2, ... in the order listed. A set listed twice, or one equal
// to the global set, is InvalidArgument naming the entry; lists that differ between ranks
// are InvalidArgument on every rank. kolo is then not started, and init() may be called
// again.
void init(const std::vector<std::vector<int>>& process_sets);
// init(MPI_Comm), which starts kolo on a sub-communicator, is in kolo/kolo_mpi.h: this
// header does not need MPI's headers.
// Fails every pending handle with StatusCode::Aborted and joins the background thread.
// All ranks should call it; it returns once this rank's thread has stopped.
void shutdown();
bool is_initialized();

// Every process set of the job: id -> its ranks (Horovod's get_process_set_ids_and_ranks()).
std::map<int, std::vector<int>> process_sets();
// With KOLO_DYNAMIC_PROCESS_SETS=1 only. Collective over all ranks (as Horovod's): every
// rank calls them, in the same order. Adding a set that exists, or removing the global
// set, is InvalidArgument. Removing a set fails its pending operations with Aborted.
ProcessSet add_process_set(const std::vector<int>& ranks);
void remove_process_set(const ProcessSet& set);

int rank();
int size();
int local_rank();   // rank among the processes on this node
int local_size();
int cross_rank();   // index of this node among the nodes
int cross_size();   // number of nodes

// ---- Collectives -----------------------------------------------------------------------
//
// Every operation runs over a process set (the global one by default); only the set's
// ranks take part, and a rank outside it gets InvalidArgument. Ranks given to an operation
// (a broadcast's root) are ranks of the global set. A name must be unique among the
// operations in flight in its set; an empty name gets one of kolo's ("allreduce.noname.3":
// per operation type and set, in submission order), so unnamed calls made in the same
// order on every rank match.

// How float32 and float64 tensors travel: as they are, or cast to 16 bits on the wire
// (half the bytes; the result is cast back). 16-bit tensors travel as they are.
enum class Compression : int { None, FP16, BF16 };
const char* compression_name(Compression compression);  // "none", "fp16", "bf16"

struct AllreduceOptions {
  ReduceOp op = ReduceOp::Average;
  double prescale = 1.0;   // multiplies the input before the reduction
  double postscale = 1.0;  // multiplies the result (after the average's 1/size)
  Compression compression = Compression::None;  // must be the same on every rank
  ProcessSet process_set{};
};

// output may be the same memory as input (in place). Shapes and dtypes must match.
Handle allreduce_async(const std::string& name, const TensorView& input, const TensorView& output,
                       const AllreduceOptions& options = {});
Handle allreduce_async(const std::string& name, const TensorView& inout,
                       const AllreduceOptions& options = {});
// Negotiated and executed as one unit: none runs before all are ready on every rank.
std::vector<Handle> grouped_allreduce_async(const std::vector<std::string>& names,
                                            const std::vector<TensorView>& inputs,
                                            const std::vector<TensorView>& outputs,
                                            const AllreduceOptions& options = {});
// Concatenates every rank's input along the first dimension (which may differ per rank;
// the other dimensions may not). Result: handle.output().
Handle allgather_async(const std::string& name, const TensorView& input, const ProcessSet& set = {});
// Negotiated as one unit, like grouped_allreduce_async.
std::vector<Handle> grouped_allgather_async(const std::vector<std::string>& names,
                                            const std::vector<TensorView>& inputs, const ProcessSet& set = {});
// Overwrites `buffer` on every rank with root's (root: a rank of the global set, in `set`).
Handle broadcast_async(const std::string& name, const TensorView& buffer, int root, const ProcessSet& set = {});
// Sends splits[r] first-dimension rows to the set's r-th rank (splits empty: equal split;
// the first dimension must then divide by the set's size). Result: handle.output(),
// handle.received_splits().
Handle alltoall_async(const std::string& name, const TensorView& input, const std::vector<int64_t>& splits = {},
                      const ProcessSet& set = {});

struct ReducescatterOptions {
  ReduceOp op = ReduceOp::Average;  // not Adasum
  double prescale = 1.0;
  double postscale = 1.0;
  ProcessSet process_set{};
};
// Reduces the inputs (same shape on every rank), then gives the set's r-th rank its part of
// the first dimension: rows are split as evenly as possible, lower ranks get the extra ones.
Handle reducescatter_async(const std::string& name, const TensorView& input, const ReducescatterOptions& options = {});
Handle reducescatter_async(const std::string& name, const TensorView& input, ReduceOp op);
std::vector<Handle> grouped_reducescatter_async(const std::vector<std::string>& names,
                                                const std::vector<TensorView>& inputs,
                                                const ReducescatterOptions& options = {});

// Blocking forms: wait and throw kolo::Error on failure.
void allreduce(const std::string& name, const TensorView& inout, const AllreduceOptions& options = {});
void broadcast(const std::string& name, const TensorView& buffer, int root, const ProcessSet& set = {});
void barrier(const ProcessSet& set = {});
// Declares that this rank has no more data for `set`. Until every rank of the set has
// joined, this rank takes part in the others' allreduces with zeros (an Average still
// divides by the set's size, as in Horovod); allgather, broadcast, alltoall and
// reducescatter fail while a rank has joined, as in Horovod. Blocks until all have joined;
// returns the (global) rank that joined last.
int join(const ProcessSet& set = {});

// Byte buffers of any size, for a binding's broadcast_object and allgather_object: root's
// bytes on every rank; every rank's bytes, in rank order of the set.
std::string broadcast_bytes(const std::string& name, const std::string& bytes, int root, const ProcessSet& set = {});
std::vector<std::string> allgather_bytes(const std::string& name, const std::string& bytes,
                                         const ProcessSet& set = {});

// The timeline (KOLO_TIMELINE), started and stopped while kolo runs; rank 0 writes it,
// each event naming its process set, or every rank its own when `path` contains "{rank}".
// Starting one while another is open closes the first, on every rank; a path that cannot
// be written throws kolo::Error (IoError) and leaves the open one running.
// KOLO_TIMELINE=DYNAMIC starts none at init() and leaves it to these calls.
void start_timeline(const std::string& path, bool mark_cycles = false);
void stop_timeline();

// The configuration in effect (read from the environment at init()).
std::string describe_configuration();

// ---- GPU ---------------------------------------------------------------------------------

// The stream (a cudaStream_t) on which the calling thread produces its GPU tensors; nullptr
// (the default) is the legacy default stream. At each submission of a GPU tensor kolo
// records an event on it, and its collective waits for that event on the device: the
// caller need not synchronise before submitting, and no thread waits for the GPU.
void set_cuda_stream(void* cuda_stream);

// What this build of kolo can do (`kolorun --check-build`). Needs no init().
struct BuildInfo {
  std::string version;               // kolo's
  std::string mpi_library;           // MPI_Get_library_version, up to its first comma or line end
  std::string mpi_standard;          // MPI_Get_version of the loaded library, e.g. "3.1"
  bool cuda = false;                 // built with CUDA: GPU tensors are supported
  std::string cuda_compiled;         // CUDA toolkit kolo was compiled with, e.g. "13.0"
  std::string cuda_runtime;          // the CUDA runtime loaded now
  std::string cuda_driver;           // the driver's CUDA version ("none" without a driver)
  int cuda_devices = 0;              // visible devices (0 without a driver or device)
  bool nccl = false;                 // built with NCCL: KOLO_GPU_OPERATIONS=NCCL works
  std::string nccl_compiled;         // e.g. "2.28.9"
  int nccl_version_code = 0;         // the same as NCCL_VERSION_CODE, e.g. 22809
  std::string nccl_runtime;          // the libnccl loaded now
  bool gloo = false;                 // built with Gloo: kolorun --gloo and elastic jobs work
};
BuildInfo build_info();
// Horovod's build and environment queries. Need no init(), except the last two.
bool mpi_built();    // always: kolo is built with MPI
bool gloo_built();   // this build has the Gloo transport (kolorun --gloo, elastic jobs)
bool gloo_enabled(); // kolo runs on Gloo now (a kolorun --gloo or elastic worker)
bool mpi_enabled();  // kolo runs on MPI now
int nccl_built();    // as Horovod's: the NCCL_VERSION_CODE kolo was built with, 0 without NCCL
bool cuda_built();
bool mpi_threads_supported();  // MPI's thread level is MPI_THREAD_MULTIPLE (InvalidArgument over Gloo)
bool is_homogeneous();         // every node runs the same number of ranks

}  // namespace kolo

// Compatibility, until the next release: where <mpi.h> is on the include path, this
// header also declares init(MPI_Comm) (by including kolo/kolo_mpi.h), so that a program
// that calls it with only kolo.h included still compiles. Include kolo/kolo_mpi.h for it;
// define KOLO_NO_MPI_HEADER to leave MPI out now. See docs/embedding.md.
#ifndef KOLO_NO_MPI_HEADER
#if defined(__has_include)
#if __has_include(<mpi.h>)
#include "kolo/kolo_mpi.h"
#endif
#endif
#endif
