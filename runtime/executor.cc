#include "executor.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "ops/dtype.h"

namespace kolo {
namespace {

int64_t row_elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (std::size_t i = 1; i < shape.size(); ++i) n *= shape[i];
  return n;
}

void allocate_output(TensorEntry& entry, std::vector<int64_t> shape) {
  detail::HandleState& h = *entry.handle;
  TensorView& out = h.output;
  out.dtype = entry.request.dtype;
  out.device = entry.request.device;
  out.shape = std::move(shape);
  h.output_storage.resize(out.num_bytes());
  out.data = h.output_storage.data();
}

// Rows of the first dimension that rank r gets when `rows` are split over `size` ranks.
int64_t rows_of_rank(int64_t rows, int size, int r) {
  return rows / size + (r < rows % size ? 1 : 0);
}

}  // namespace

Executor::Executor(ops::Backend& backend, int rank, int size, Timeline& timeline)
    : backend_(backend), rank_(rank), size_(size), timeline_(timeline) {}

double Executor::final_scale(const Response& r) const {
  return r.postscale * (r.op == ReduceOp::Average ? 1.0 / size_ : 1.0);
}

std::byte* Executor::fusion_buffer(std::size_t bytes) {
  if (fusion_buffer_.size() < bytes) fusion_buffer_.resize(bytes);
  return fusion_buffer_.data();
}

void Executor::mark(const char* phase, const std::vector<TensorEntry*>& entries,
                    const Response& r) {
  if (!timeline_.enabled()) return;
  const auto now = Clock::now();
  const std::string args = r.names.size() > 1
                               ? "\"fused_group\":" + std::to_string(next_group_id_) +
                                     ",\"fused_tensors\":" + std::to_string(r.names.size())
                               : "";
  for (std::size_t i = 0; i < r.names.size(); ++i)
    if (entries[i] != nullptr) timeline_.phase(r.names[i], phase, phase_start_, now, args);
  phase_start_ = now;
}

void Executor::run(const Response& r, const std::vector<TensorEntry*>& entries,
                   Clock::time_point decided) {
  if (timeline_.enabled()) {
    for (std::size_t i = 0; i < entries.size(); ++i) {
      TensorEntry* e = entries[i];
      if (e == nullptr) continue;
      timeline_.phase(r.names[i], "NEGOTIATE", e->enqueued, e->reported);
      timeline_.phase(r.names[i], "WAIT_FOR_OTHERS", e->reported, decided);
    }
    phase_start_ = Clock::now();
  }
  switch (r.type) {
    case OpType::Allreduce: allreduce(r, entries); break;
    case OpType::Allgather: allgather(r, *entries.at(0)); break;
    case OpType::Broadcast:
      backend_.broadcast(entries.at(0)->output, r.element_counts.at(0), r.dtype, r.root);
      mark("BROADCAST", entries, r);
      break;
    case OpType::Alltoall: alltoall(r, *entries.at(0)); break;
    case OpType::Reducescatter: reducescatter(r, *entries.at(0)); break;
    case OpType::Barrier:
      backend_.barrier();
      mark("BARRIER", entries, r);
      break;
  }
}

void Executor::allreduce(const Response& r, const std::vector<TensorEntry*>& entries) {
  if (r.names.size() == 1) {
    allreduce_one(r, entries[0]);
    return;
  }
  const auto start = Clock::now();
  allreduce_fused(r, entries);
  int64_t bytes = 0;
  for (int64_t n : r.element_counts) bytes += n * int64_t(dtype_size(r.dtype));
  fused_bytes_total_ += bytes;
  timeline_.fused_group(next_group_id_++, r.names, bytes, start, Clock::now());
}

// A tensor on its own runs on the caller's memory: no fusion-buffer copies.
void Executor::allreduce_one(const Response& r, TensorEntry* entry) {
  const int64_t count = r.element_counts[0];
  const ReduceOp op = r.op == ReduceOp::Average ? ReduceOp::Sum : r.op;
  std::vector<std::byte> zeros;  // a joined rank's contribution
  void* out;
  const void* in;
  if (entry == nullptr) {
    zeros.resize(static_cast<std::size_t>(count) * dtype_size(r.dtype));
    in = out = zeros.data();
  } else {
    in = entry->input;
    out = entry->output;
    if (r.prescale != 1.0) {
      ops::scale_copy(out, in, count, r.dtype, r.prescale);
      in = out;
    }
  }
  backend_.allreduce(in, out, count, r.dtype, op);
  mark("ALLREDUCE", {entry}, r);
  if (const double factor = final_scale(r); factor != 1.0 && entry != nullptr)
    ops::scale(out, count, r.dtype, factor);
}

void Executor::allreduce_fused(const Response& r, const std::vector<TensorEntry*>& entries) {
  const std::size_t element = dtype_size(r.dtype);
  const int64_t total = std::accumulate(r.element_counts.begin(), r.element_counts.end(), int64_t{0});
  std::byte* buffer = fusion_buffer(static_cast<std::size_t>(total) * element);

  std::byte* at = buffer;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::size_t bytes = static_cast<std::size_t>(r.element_counts[i]) * element;
    if (entries[i] == nullptr) std::memset(at, 0, bytes);
    else ops::scale_copy(at, entries[i]->input, r.element_counts[i], r.dtype, r.prescale);
    at += bytes;
  }
  mark("MEMCPY_IN", entries, r);

  backend_.allreduce(buffer, buffer, total, r.dtype,
                     r.op == ReduceOp::Average ? ReduceOp::Sum : r.op);
  mark("ALLREDUCE", entries, r);

  const double factor = final_scale(r);
  at = buffer;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (entries[i] != nullptr)
      ops::scale_copy(entries[i]->output, at, r.element_counts[i], r.dtype, factor);
    at += static_cast<std::size_t>(r.element_counts[i]) * element;
  }
  mark("MEMCPY_OUT", entries, r);
}

void Executor::allgather(const Response& r, TensorEntry& entry) {
  const int64_t row = row_elements(entry.request.shape);
  std::vector<int64_t> counts(size_);
  int64_t rows = 0;
  for (int i = 0; i < size_; ++i) {
    counts[i] = r.rank_first_dims[i] * row;
    rows += r.rank_first_dims[i];
  }
  std::vector<int64_t> shape = entry.request.shape;
  shape[0] = rows;
  allocate_output(entry, shape);
  backend_.allgatherv(entry.input, entry.handle->output.data, counts, r.dtype);
  mark("ALLGATHER", {&entry}, r);
}

void Executor::alltoall(const Response& r, TensorEntry& entry) {
  const int64_t row = row_elements(entry.request.shape);
  // Each rank first learns how many rows every other rank sends it.
  std::vector<int64_t> recv_splits(size_);
  const std::vector<int64_t> ones(size_, 1);
  backend_.alltoallv(entry.splits.data(), ones, recv_splits.data(), ones, DType::Int64);
  std::vector<int64_t> send_counts(size_), recv_counts(size_);
  int64_t rows = 0;
  for (int i = 0; i < size_; ++i) {
    send_counts[i] = entry.splits[i] * row;
    recv_counts[i] = recv_splits[i] * row;
    rows += recv_splits[i];
  }
  std::vector<int64_t> shape = entry.request.shape;
  shape[0] = rows;
  allocate_output(entry, shape);
  backend_.alltoallv(entry.input, send_counts, entry.handle->output.data, recv_counts, r.dtype);
  entry.handle->received_splits = std::move(recv_splits);
  mark("ALLTOALL", {&entry}, r);
}

void Executor::reducescatter(const Response& r, TensorEntry& entry) {
  const int64_t row = row_elements(entry.request.shape);
  const int64_t rows = entry.request.shape.at(0);
  std::vector<int64_t> counts(size_);
  for (int i = 0; i < size_; ++i) counts[i] = rows_of_rank(rows, size_, i) * row;
  std::vector<int64_t> shape = entry.request.shape;
  shape[0] = rows_of_rank(rows, size_, rank_);
  allocate_output(entry, shape);
  void* out = entry.handle->output.data;
  backend_.reducescatter(entry.input, out, counts, r.dtype,
                         r.op == ReduceOp::Average ? ReduceOp::Sum : r.op);
  if (r.op == ReduceOp::Average) ops::scale(out, counts[rank_], r.dtype, 1.0 / size_);
  mark("REDUCESCATTER", {&entry}, r);
}

}  // namespace kolo
