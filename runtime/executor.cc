#include "executor.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "gpu_state.h"
#include "kolo/check.h"
#include "ops/adasum.h"
#include "response_checks.h"

namespace kolo {
namespace {

int64_t row_elements(const Shape& shape) {
  int64_t n = 1;
  for (std::size_t i = 1; i < shape.size(); ++i) n *= shape[i];
  return n;
}

// Rows of the first dimension that rank r gets when `rows` are split over `size` ranks.
int64_t rows_of_rank(int64_t rows, int size, int r) {
  return rows / size + (r < rows % size ? 1 : 0);
}

ReduceOp backend_op(ReduceOp op) { return op == ReduceOp::Average ? ReduceOp::Sum : op; }

// A tensor's first phase, named as Horovod's timeline names it (its users and its test
// suite look for NEGOTIATE_ALLREDUCE).
const char* negotiate_phase(OpType type) {
  switch (type) {
    case OpType::Allreduce: return "NEGOTIATE_ALLREDUCE";
    case OpType::Allgather: return "NEGOTIATE_ALLGATHER";
    case OpType::Broadcast: return "NEGOTIATE_BROADCAST";
    case OpType::Alltoall: return "NEGOTIATE_ALLTOALL";
    case OpType::Reducescatter: return "NEGOTIATE_REDUCESCATTER";
    case OpType::Barrier: return "NEGOTIATE_BARRIER";
    case OpType::ProcessSet: break;
  }
  return "NEGOTIATE";
}

}  // namespace

DType wire_dtype(DType dtype, Compression compression) {
  if (dtype != DType::Float32 && dtype != DType::Float64) return dtype;
  switch (compression) {
    case Compression::FP16: return DType::Float16;
    case Compression::BF16: return DType::BFloat16;
    default: return dtype;
  }
}

Executor::Executor(Devices& devices, int rank, int size, Timeline& timeline, const Clock& clock,
                   ExecutorRole role)
    : devices_(devices), rank_(rank), size_(size), timeline_(timeline), clock_(clock), role_(std::move(role)) {}

// postscale / size, as Horovod divides its postscale (not postscale * (1 / size), which
// can round the other way and truncate an integer one lower).
double Executor::final_scale(const Response& r) const {
  return r.op == ReduceOp::Average ? r.postscale / size_ : r.postscale;
}

void Executor::mark(const char* phase, const std::vector<TensorEntry*>& entries,
                    const Response& r) {
  if (!timeline_.enabled()) return;
  const auto now = clock_.now();
  const std::string group = r.names.size() > 1
                                ? "\"fused_group\":" + std::to_string(next_group_id_) +
                                      ",\"fused_tensors\":" + std::to_string(r.names.size()) + ","
                                : "";
  // Each tensor's own bytes (this rank's input), fused or not.
  for (std::size_t i = 0; i < r.names.size(); ++i)
    if (entries[i] != nullptr)
      timeline_.phase(role_.set_id, r.names[i], phase, phase_start_, now,
                      group + "\"bytes\":" + std::to_string(r.element_counts[i] * int64_t(dtype_size(r.dtype))));
  phase_start_ = now;
}

void* Executor::allocate_output(TensorEntry& entry, std::vector<int64_t> shape, Path& path) {
  detail::HandleState& h = entry.handle;
  TensorView& out = h.output;
  out.dtype = entry.request.dtype;
  out.device = entry.request.device;
  out.shape = std::move(shape);
  if (out.device.is_cpu()) {
    h.output_storage.resize(out.num_bytes());
    out.data = h.output_storage.data();
  } else {
    if (!h.gpu) h.gpu = std::make_shared<detail::GpuState>();
    h.gpu->device_output = path.ops.allocate(std::max<std::size_t>(out.num_bytes(), 1));
    out.data = h.gpu->device_output.get();
  }
  return out.data;
}

std::shared_ptr<ops::Event> Executor::run(const Response& r, const std::vector<TensorEntry*>& entries,
                                          Clock::time_point decided) {
  check_response_fits(r, entries, rank_, size_, role_.global_ranks);
  if (timeline_.enabled()) {
    for (std::size_t i = 0; i < entries.size(); ++i) {
      TensorEntry* e = entries[i];
      if (e == nullptr) continue;
      timeline_.phase(role_.set_id, r.names[i], negotiate_phase(r.type), e->enqueued, e->reported);
      timeline_.phase(role_.set_id, r.names[i], "WAIT_FOR_OTHERS", e->reported, decided);
    }
    phase_start_ = clock_.now();
  }
  if (r.type == OpType::Barrier) {
    devices_.host().backend.barrier();
    mark("BARRIER", entries, r);
    return nullptr;
  }
  Path path = devices_.path(r.device);
  if (!r.device.is_cpu()) {
    // The collective waits, on the device, for each tensor's producer.
    for (TensorEntry* e : entries)
      if (e != nullptr && e->handle.gpu && e->handle.gpu->ready) path.ops.wait(*e->handle.gpu->ready);
  }
  switch (r.type) {
    case OpType::Allreduce: allreduce(r, entries, path); break;
    case OpType::Allgather: allgather(r, *entries.at(0), path); break;
    case OpType::Broadcast:
      path.backend.broadcast(entries.at(0)->output, r.element_counts.at(0), r.dtype, set_rank_of(r.root));
      mark("BROADCAST", entries, r);
      break;
    case OpType::Alltoall: alltoall(r, *entries.at(0), path); break;
    case OpType::Reducescatter: reducescatter(r, *entries.at(0), path); break;
    case OpType::Barrier:
    case OpType::ProcessSet: break;  // the runtime's
  }
  return path.ops.record();
}

int Executor::set_rank_of(int global_rank) const {
  const std::vector<int>& g = role_.global_ranks;
  if (g.empty()) return global_rank;
  return static_cast<int>(std::find(g.begin(), g.end(), global_rank) - g.begin());  // checked by the API
}

// A tensor on its own runs on the caller's memory (allreduce_one). Everything else goes
// through the fusion buffer: fused tensors, a compressed tensor (it needs a buffer of its
// 16-bit form), and Adasum, whose dot products are per tensor of one buffer.
void Executor::allreduce(const Response& r, const std::vector<TensorEntry*>& entries, Path& path) {
  const DType wire = wire_dtype(r.dtype, r.compression);
  if (r.op != ReduceOp::Adasum && r.names.size() == 1 && wire == r.dtype) {
    allreduce_one(r, entries[0], path);
    return;
  }
  const Clock::time_point start = timeline_.enabled() ? clock_.now() : Clock::time_point();
  std::byte* buffer = pack(r, entries, path);
  const int64_t total = std::accumulate(r.element_counts.begin(), r.element_counts.end(), int64_t{0});
  if (r.op == ReduceOp::Adasum) {
    // Combined by ops/adasum on the host. No 1/size: Adasum's result is already on the
    // scale of one gradient. A joined rank's zeros leave its partner's vector as it is.
    KOLO_CHECK(r.device.is_cpu(), StatusCode::Internal, "kolo: Adasum of a GPU tensor reached the executor");
    ops::adasum_allreduce(buffer, r.element_counts, wire, rank_, size_, path.backend, adasum_scratch_);
    mark("ADASUM", entries, r);
    unpack(r, entries, buffer, path, r.postscale);
  } else {
    // Scaled on the copy out, which reads every element anyway (in the tensor's own dtype,
    // after a compressed buffer is cast back).
    path.backend.allreduce(buffer, buffer, total, wire, backend_op(r.op), 1.0);
    mark("ALLREDUCE", entries, r);
    unpack(r, entries, buffer, path, final_scale(r));
  }
  const int64_t bytes = total * int64_t(dtype_size(r.dtype));
  fused_bytes_total_ += bytes;
  if (timeline_.enabled()) timeline_.fused_group(role_.set_id, next_group_id_, r.names, bytes, start, clock_.now());
  ++next_group_id_;
}

// A tensor on its own runs on the caller's memory: no fusion-buffer copies. The backend
// scales where it touches the data anyway: the MPI backend the result (average,
// postscale) on each piece's one write into the tensor, and the prescale as its ring
// reads the input. Other backends get the input prescaled in a pass of its own first (in
// place, or the copy into the output).
void Executor::allreduce_one(const Response& r, TensorEntry* entry, Path& path) {
  const int64_t count = r.element_counts[0];
  std::shared_ptr<void> zeros;  // a joined rank's contribution
  void* out;
  const void* in;
  double prescale = r.prescale;
  if (entry == nullptr) {
    zeros = path.ops.allocate(static_cast<std::size_t>(count) * dtype_size(r.dtype));
    const ops::CopyPiece fill{zeros.get(), nullptr, count};
    path.ops.convert({&fill, 1}, r.dtype, r.dtype, 1.0);
    in = out = zeros.get();
    // Zeros need no prescale, but a ring that folds it in applies each rank's to its
    // neighbour's input: the joined rank must pass the others' (zeros scaled stay zeros).
    if (!path.backend.folds_prescale()) prescale = 1.0;
  } else {
    in = entry->input;
    out = entry->output;
    if (prescale != 1.0 && !path.backend.folds_prescale()) {
      const ops::CopyPiece piece{out, in, count};
      path.ops.convert({&piece, 1}, r.dtype, r.dtype, prescale);
      in = out;
      prescale = 1.0;
    }
  }
  // The same scales on every rank, a joined one too (its result, zeros' sum, is dropped):
  // the hierarchical backend scales a slice on one rank that the others of its node get.
  if (prescale != 1.0) {
    path.backend.allreduce_prescaled(in, out, count, r.dtype, backend_op(r.op), prescale, final_scale(r));
  } else {
    path.backend.allreduce(in, out, count, r.dtype, backend_op(r.op), final_scale(r));
  }
  mark("ALLREDUCE", {entry}, r);
}

// One pass packs every tensor into the fusion buffer (a joined rank's zeros included),
// prescaled and cast to the wire's dtype.
std::byte* Executor::pack(const Response& r, const std::vector<TensorEntry*>& entries, Path& path) {
  const DType wire = wire_dtype(r.dtype, r.compression);
  const std::size_t element = dtype_size(wire);
  const int64_t total = std::accumulate(r.element_counts.begin(), r.element_counts.end(), int64_t{0});
  std::byte* buffer = static_cast<std::byte*>(
      fusion_buffers_[static_cast<std::size_t>(r.device.kind)].get(path.ops, static_cast<std::size_t>(total) * element));
  pieces_.clear();
  std::byte* at = buffer;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    pieces_.push_back({at, entries[i] != nullptr ? entries[i]->input : nullptr, r.element_counts[i]});
    at += static_cast<std::size_t>(r.element_counts[i]) * element;
  }
  path.ops.convert(pieces_, r.dtype, wire, r.prescale);
  mark("MEMCPY_IN", entries, r);
  return buffer;
}

// The copy out of the fusion buffer, cast back to the tensors' dtype and multiplied by
// `scale`. A joined rank has no tensors to fill.
void Executor::unpack(const Response& r, const std::vector<TensorEntry*>& entries, const std::byte* buffer, Path& path,
                      double scale) {
  const DType wire = wire_dtype(r.dtype, r.compression);
  const std::size_t element = dtype_size(wire);
  pieces_.clear();
  const std::byte* at = buffer;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (entries[i] != nullptr) pieces_.push_back({entries[i]->output, at, r.element_counts[i]});
    at += static_cast<std::size_t>(r.element_counts[i]) * element;
  }
  path.ops.convert(pieces_, wire, r.dtype, scale);
  mark("MEMCPY_OUT", entries, r);
}

void Executor::allgather(const Response& r, TensorEntry& entry, Path& path) {
  const int64_t row = row_elements(entry.request.shape);
  std::vector<int64_t> counts(size_);
  int64_t rows = 0;
  for (int i = 0; i < size_; ++i) {
    counts[i] = r.rank_first_dims[i] * row;
    rows += r.rank_first_dims[i];
  }
  std::vector<int64_t> shape = entry.request.shape.to_vector();
  shape[0] = rows;
  void* out = allocate_output(entry, shape, path);
  path.backend.allgatherv(entry.input, out, counts, r.dtype);
  mark("ALLGATHER", {&entry}, r);
}

void Executor::alltoall(const Response& r, TensorEntry& entry, Path& path) {
  const int64_t row = row_elements(entry.request.shape);
  // Each rank first learns how many rows every other rank sends it (host memory).
  std::vector<int64_t> recv_splits(size_);
  const std::vector<int64_t> ones(size_, 1);
  devices_.host().backend.alltoallv(entry.splits.data(), ones, recv_splits.data(), ones, DType::Int64);
  const int64_t rows = checked_total_rows(recv_splits, row, dtype_size(r.dtype), "an alltoall's splits");
  std::vector<int64_t> send_counts(size_), recv_counts(size_);
  for (int i = 0; i < size_; ++i) {
    send_counts[i] = entry.splits[i] * row;
    recv_counts[i] = recv_splits[i] * row;
  }
  std::vector<int64_t> shape = entry.request.shape.to_vector();
  shape[0] = rows;
  void* out = allocate_output(entry, shape, path);
  path.backend.alltoallv(entry.input, send_counts, out, recv_counts, r.dtype);
  entry.handle.received_splits = std::move(recv_splits);
  mark("ALLTOALL", {&entry}, r);
}

// The prescale goes into a copy of the input in the fusion buffer (the caller's input is
// never written; on a GPU, later work on the buffer is ordered after this on kolo's
// stream); the average's 1/size and the postscale are one factor the backend applies to
// this rank's part as it is reduced.
void Executor::reducescatter(const Response& r, TensorEntry& entry, Path& path) {
  const int64_t row = row_elements(entry.request.shape);
  const int64_t rows = entry.request.shape.at(0);
  std::vector<int64_t> counts(size_);
  for (int i = 0; i < size_; ++i) counts[i] = rows_of_rank(rows, size_, i) * row;
  std::vector<int64_t> shape = entry.request.shape.to_vector();
  shape[0] = rows_of_rank(rows, size_, rank_);
  void* out = allocate_output(entry, shape, path);
  const void* in = entry.input;
  if (r.prescale != 1.0) {
    const int64_t total = rows * row;
    void* prescaled = fusion_buffers_[static_cast<std::size_t>(r.device.kind)].get(
        path.ops, static_cast<std::size_t>(total) * dtype_size(r.dtype));
    const ops::CopyPiece piece{prescaled, in, total};
    path.ops.convert({&piece, 1}, r.dtype, r.dtype, r.prescale);
    in = prescaled;
  }
  path.backend.reducescatter(in, out, counts, r.dtype, backend_op(r.op), final_scale(r));
  mark("REDUCESCATTER", {&entry}, r);
}

}  // namespace kolo
