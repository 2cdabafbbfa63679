// MPI data plane (blocking, tuned collectives: Open MPI's non-blocking ones are about
// twice as slow for large buffers here) and control plane (non-blocking, waited on
// politely and with a deadline, since that is where a rank waits for the others).
#include "mpi_backend.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "dtype.h"
#include "ring_allreduce.h"
#include "kolo/check.h"

namespace kolo::ops {
namespace {

// ---- kolo's own types and reductions --------------------------------------------------
// MPI has no 16-bit float types, and where its built-in reductions differ from kolo's
// (ops/dtype.h) kolo's own run instead, so that a result does not depend on the path a
// tensor takes (MPI's call for small ones, kolo's ring for large ones, Gloo): Open MPI's
// vectorised 8- and 16-bit integer sums saturate where kolo's wrap, and its min and max
// of floats drop a NaN held by some ranks.

MPI_Datatype g_float16 = MPI_DATATYPE_NULL;
MPI_Datatype g_bfloat16 = MPI_DATATYPE_NULL;
MPI_Op g_kolo_ops[5] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};

DType dtype_of(MPI_Datatype type) {
  if (type == g_bfloat16) return DType::BFloat16;
  if (type == g_float16) return DType::Float16;
  if (type == MPI_FLOAT) return DType::Float32;
  if (type == MPI_DOUBLE) return DType::Float64;
  if (type == MPI_INT8_T) return DType::Int8;
  if (type == MPI_UINT8_T) return DType::UInt8;
  if (type == MPI_INT16_T) return DType::Int16;
  if (type == MPI_INT32_T) return DType::Int32;
  return DType::Int64;
}

template <ReduceOp Op>
void kolo_reduction(void* in, void* inout, int* len, MPI_Datatype* type) {
  reduce_into(inout, in, *len, dtype_of(*type), Op);
}

bool kolo_reduces(ReduceOp op, DType dtype) {
  switch (dtype) {
    case DType::Float16:
    case DType::BFloat16: return true;
    case DType::Int8:
    case DType::UInt8:
    case DType::Int16: return op == ReduceOp::Sum || op == ReduceOp::Product;
    case DType::Float32:
    case DType::Float64: return op == ReduceOp::Min || op == ReduceOp::Max;
    default: return false;
  }
}

void register_kolo_types() {
  if (g_float16 != MPI_DATATYPE_NULL) return;
  check_mpi(MPI_Type_contiguous(2, MPI_BYTE, &g_float16), "MPI_Type_contiguous (float16)");
  check_mpi(MPI_Type_commit(&g_float16), "MPI_Type_commit (float16)");
  check_mpi(MPI_Type_contiguous(2, MPI_BYTE, &g_bfloat16), "MPI_Type_contiguous (bfloat16)");
  check_mpi(MPI_Type_commit(&g_bfloat16), "MPI_Type_commit (bfloat16)");
  const std::pair<ReduceOp, MPI_User_function*> reductions[] = {
      {ReduceOp::Sum, &kolo_reduction<ReduceOp::Sum>},
      {ReduceOp::Min, &kolo_reduction<ReduceOp::Min>},
      {ReduceOp::Max, &kolo_reduction<ReduceOp::Max>},
      {ReduceOp::Product, &kolo_reduction<ReduceOp::Product>}};
  for (const auto& [op, reduce] : reductions)
    check_mpi(MPI_Op_create(reduce, 1, &g_kolo_ops[int(op)]), "MPI_Op_create (kolo's reductions)");
}

MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case DType::Float32: return MPI_FLOAT;
    case DType::Float64: return MPI_DOUBLE;
    case DType::Float16: return g_float16;
    case DType::BFloat16: return g_bfloat16;
    case DType::Int8: return MPI_INT8_T;
    case DType::UInt8: return MPI_UINT8_T;
    case DType::Int16: return MPI_INT16_T;
    case DType::Int32: return MPI_INT32_T;
    case DType::Int64: return MPI_INT64_T;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op mpi_op(ReduceOp op, DType dtype) {
  KOLO_CHECK(op != ReduceOp::Adasum, StatusCode::Internal,
             "kolo: Adasum reached an MPI reduction; the executor runs it over sendrecv (ops/adasum.h)");
  KOLO_CHECK(op != ReduceOp::Average, StatusCode::Internal,
             "kolo: Average reached an MPI reduction; the executor sums and scales (runtime/executor.cc)");
  if (kolo_reduces(op, dtype)) return g_kolo_ops[int(op)];
  switch (op) {
    case ReduceOp::Min: return MPI_MIN;
    case ReduceOp::Max: return MPI_MAX;
    case ReduceOp::Product: return MPI_PROD;
    default: return MPI_SUM;
  }
}

int as_int(int64_t value, const char* what) {
  KOLO_CHECK(value >= 0, StatusCode::Internal,
             std::string(what) + " of " + std::to_string(value) + " elements is negative");
  KOLO_CHECK(value <= INT_MAX, StatusCode::Unsupported,
             std::string(what) + " of " + std::to_string(value) +
                 " elements exceeds what one MPI call can move (2^31 - 1)");
  return static_cast<int>(value);
}

// Where each part starts, in 64 bits: parts that each fit an int may not fit one together.
std::vector<int64_t> displacements(std::span<const int64_t> counts) {
  std::vector<int64_t> displs(counts.size(), 0);
  for (std::size_t i = 1; i < counts.size(); ++i) displs[i] = displs[i - 1] + counts[i - 1];
  return displs;
}

// A piece's displacements (each part's start, plus `at`) as MPI's ints, a part the piece
// does not touch at 0; none where one is past 2^31 - 1 (a collective of more elements than
// that in all, whose pieces each fit).
std::optional<std::vector<int>> piece_displacements(const std::vector<int64_t>& displs, int64_t at,
                                                    const std::vector<int>& piece_counts) {
  std::vector<int> out(displs.size(), 0);
  for (std::size_t r = 0; r < displs.size(); ++r) {
    if (piece_counts[r] == 0) continue;
    if (displs[r] + at > INT_MAX) return std::nullopt;
    out[r] = static_cast<int>(displs[r] + at);
  }
  return out;
}

// ---- data plane -------------------------------------------------------------------------

class MpiBackend final : public Backend {
 public:
  MpiBackend(MPI_Comm comm, const MpiOptions& options)
      : comm_(comm), chunk_bytes_(options.allreduce_chunk_bytes), progress_(options.progress) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    chunk_bytes_ = allreduce_piece_bytes(chunk_bytes_, size_);
    register_kolo_types();
  }

  std::string name() const override { return "mpi"; }
  bool supports(const Device& device) const override { return device.is_cpu(); }

  void allreduce(const void* input, void* output, int64_t count, DType dtype, ReduceOp op,
                 double scale) override {
    allreduce_prescaled(input, output, count, dtype, op, 1.0, scale);
  }

  // In pieces of chunk_bytes_, each moved by kolo's ring (ops/ring_allreduce.h: a prescale
  // and a scaled result, an average, cost what a sum costs there) or, below
  // kRingMinBytesPerRank a rank, by MPI_Allreduce: latency sets a small piece's time, and
  // MPI's recursive doubling takes log2(n) steps to the ring's 2 (n - 1). Such a piece is
  // still in cache when it is scaled, before and after.
  bool folds_prescale() const override { return true; }
  void allreduce_prescaled(const void* input, void* output, int64_t count, DType dtype, ReduceOp op, double prescale,
                           double scale) override {
    const std::size_t element = dtype_size(dtype);
    const int64_t chunk = piece_elements(element);
    for (int64_t offset = 0; offset < count; offset += chunk) {
      const int n = as_int(std::min(chunk, count - offset), "allreduce");
      char* out = static_cast<char*>(output) + offset * element;
      const char* in = static_cast<const char*>(input) + offset * element;
      if (size_ > 1 && int64_t(n) * int64_t(element) >= kRingMinBytesPerRank * size_) {
        ring_allreduce(comm_, in, out, n, dtype, op, prescale, scale, scratch_);
      } else {
        const bool in_place = input == output || prescale != 1.0;
        if (prescale != 1.0) scale_copy(out, in, n, dtype, prescale);
        check_mpi(MPI_Allreduce(in_place ? MPI_IN_PLACE : in, out, n, mpi_type(dtype), mpi_op(op, dtype), comm_),
                  "MPI_Allreduce");
        ops::scale(out, n, dtype, scale);
      }
      moved();
    }
  }

  // In pieces, like the allreduce (each rank's part cut alike, piece k of every part in call
  // k, straight to its place in the output): a large allgather on a slow link shows its
  // progress, and a roll call's bytes wait behind one piece at most, not the whole call.
  void allgatherv(const void* input, void* output, std::span<const int64_t> counts,
                  DType dtype) override {
    const std::vector<int64_t> displs = displacements(counts);
    const int64_t element = static_cast<int64_t>(dtype_size(dtype));
    char* out = static_cast<char*>(output);
    // Input already at this rank's place in the output: MPI wants that said, not aliased.
    const bool in_place = input == out + displs[rank_] * element;
    const int64_t per_rank = piece_per_rank(element);
    for (int64_t at = 0, pieces = piece_count(counts, per_rank); at < pieces * per_rank; at += per_rank) {
      const std::vector<int> n = slice_counts(counts, at, per_rank);
      const char* mine = static_cast<const char*>(input) + (n[rank_] ? at : 0) * element;
      if (const std::optional<std::vector<int>> d = piece_displacements(displs, at, n)) {
        check_mpi(MPI_Allgatherv(in_place ? MPI_IN_PLACE : mine, n[rank_], mpi_type(dtype), output, n.data(),
                                 d->data(), mpi_type(dtype), comm_),
                  "MPI_Allgatherv");
      } else {
        // Past 2^31 - 1 elements an int cannot say where a part goes: each rank broadcasts
        // its part in place. (The counts, and so this choice, are the same on every rank.)
        if (!in_place && n[rank_] > 0) std::memcpy(out + (displs[rank_] + at) * element, mine, n[rank_] * element);
        for (int r = 0; r < size_; ++r)
          if (n[r] > 0)
            check_mpi(MPI_Bcast(out + (displs[r] + at) * element, n[r], mpi_type(dtype), r, comm_),
                      "MPI_Bcast (a part of an allgather)");
      }
      moved();
    }
  }

  // In pieces, like the allreduce: a large broadcast on a slow link shows its progress.
  void broadcast(void* data, int64_t count, DType dtype, int root) override {
    const std::size_t element = dtype_size(dtype);
    const int64_t chunk = piece_elements(element);
    for (int64_t offset = 0; offset < count || offset == 0; offset += chunk) {
      const int n = as_int(std::min(chunk, count - offset), "broadcast");
      check_mpi(MPI_Bcast(static_cast<char*>(data) + offset * element, n, mpi_type(dtype), root, comm_),
                "MPI_Bcast");
      moved();
    }
  }

  // In pieces, like the allgather. Which part is longest is known only together (a rank
  // knows what it sends and receives), so the number of pieces is agreed first, in one
  // 8-byte allreduce: a few microseconds on top of every alltoall.
  void alltoallv(const void* input, std::span<const int64_t> send_counts, void* output,
                 std::span<const int64_t> recv_counts, DType dtype) override {
    const std::vector<int64_t> sd = displacements(send_counts), rd = displacements(recv_counts);
    const int64_t element = static_cast<int64_t>(dtype_size(dtype));
    const int64_t per_rank = piece_per_rank(element);
    // {pieces, whether some rank's parts go past 2^31 - 1 elements}, agreed: that rank's
    // displacements do not fit MPI's ints, and every rank must then take the same path.
    const auto past_int = [](const std::vector<int64_t>& d, std::span<const int64_t> c) {
      return !d.empty() && d.back() + c.back() > INT_MAX;
    };
    int64_t plan[2] = {std::max(piece_count(send_counts, per_rank), piece_count(recv_counts, per_rank)),
                       past_int(sd, send_counts) || past_int(rd, recv_counts)};
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, plan, 2, MPI_INT64_T, MPI_MAX, comm_), "MPI_Allreduce (alltoall pieces)");
    const char* in = static_cast<const char*>(input);
    char* out = static_cast<char*>(output);
    for (int64_t at = 0; at < plan[0] * per_rank; at += per_rank) {
      const std::vector<int> sn = slice_counts(send_counts, at, per_rank), rn = slice_counts(recv_counts, at, per_rank);
      if (!plan[1]) {
        const std::vector<int> sdk = *piece_displacements(sd, at, sn), rdk = *piece_displacements(rd, at, rn);
        check_mpi(MPI_Alltoallv(input, sn.data(), sdk.data(), mpi_type(dtype), output, rn.data(), rdk.data(),
                                mpi_type(dtype), comm_),
                  "MPI_Alltoallv");
      } else {
        // Rank by rank, each exchange addressed by pointer: no displacement to overflow.
        for (int k = 0; k < size_; ++k) {
          const int to = (rank_ + k) % size_, from = (rank_ - k + size_) % size_;
          check_mpi(MPI_Sendrecv(in + (sd[to] + at) * element, sn[to], mpi_type(dtype), to, kAlltoallTag,
                                 out + (rd[from] + at) * element, rn[from], mpi_type(dtype), from, kAlltoallTag, comm_,
                                 MPI_STATUS_IGNORE),
                    "MPI_Sendrecv (a part of an alltoall)");
        }
      }
      moved();
    }
  }

  // In pieces, like the allgather: piece k reduces slice k of every rank's part. Those
  // slices are strided in the input, so a call of more than one piece packs each into
  // packed_ first (one copy of the input, against the bytes that cross the network); the
  // scaling then touches only this rank's slice, just written.
  void reducescatter(const void* input, void* output, std::span<const int64_t> counts,
                     DType dtype, ReduceOp op, double scale) override {
    const std::vector<int64_t> displs = displacements(counts);
    const std::size_t element = dtype_size(dtype);
    const int64_t per_rank = piece_per_rank(element);
    const int64_t pieces = piece_count(counts, per_rank);
    for (int64_t at = 0; at < pieces * per_rank; at += per_rank) {
      const std::vector<int> n = slice_counts(counts, at, per_rank);
      const void* send = input;
      if (pieces > 1) {
        packed_.resize(std::size_t(std::min<int64_t>(per_rank, *std::max_element(counts.begin(), counts.end()))) *
                       size_ * element);
        std::byte* to = packed_.data();
        for (int r = 0; r < size_; ++r) {
          const std::size_t bytes = std::size_t(n[r]) * element;
          if (bytes) std::memcpy(to, static_cast<const std::byte*>(input) + (displs[r] + at) * element, bytes);
          to += bytes;
        }
        send = packed_.data();
      }
      char* out = static_cast<char*>(output) + (n[rank_] ? at : 0) * element;
      check_mpi(MPI_Reduce_scatter(send, out, n.data(), mpi_type(dtype), mpi_op(op, dtype), comm_),
                "MPI_Reduce_scatter");
      if (scale != 1.0) ops::scale(out, n[rank_], dtype, scale);
      moved();
    }
  }

  void barrier() override {
    check_mpi(MPI_Barrier(comm_), "MPI_Barrier");
    moved();
  }

  // In pieces, like the allreduce, so that the watchdog sees a long exchange move. Both
  // sides cut the same way (the piece size is the same on every rank), so that piece k of
  // one side's send meets piece k of the other's receive, an empty one after the end.
  void sendrecv(const void* send, std::size_t send_bytes, void* recv, std::size_t recv_bytes, int peer) override {
    const std::size_t piece = static_cast<std::size_t>(std::max<int64_t>(1, chunk_bytes_));
    for (std::size_t at = 0; at < send_bytes || at < recv_bytes; at += piece) {
      const std::size_t out = at < send_bytes ? std::min(piece, send_bytes - at) : 0;
      const std::size_t in = at < recv_bytes ? std::min(piece, recv_bytes - at) : 0;
      const int rc = MPI_Sendrecv(static_cast<const char*>(send) + (out ? at : 0), as_int(int64_t(out), "sendrecv"),
                                  MPI_BYTE, peer, kSendrecvTag, static_cast<char*>(recv) + (in ? at : 0),
                                  as_int(int64_t(in), "sendrecv"), MPI_BYTE, peer, kSendrecvTag, comm_,
                                  MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS) check_mpi(rc, ("MPI_Sendrecv with rank " + std::to_string(peer)).c_str());
      moved();
    }
  }

  void set_allreduce_chunk_bytes(int64_t bytes) override { chunk_bytes_ = bytes; }

 private:
  void moved() {
    if (progress_ != nullptr) progress_->fetch_add(1, std::memory_order_relaxed);
  }

  // The elements of one rank's part in a piece of an allgather, alltoall or reducescatter:
  // the allreduce's piece shared among the ranks.
  // Elements in one piece of an allreduce or broadcast: KOLO_ALLREDUCE_CHUNK_BYTES, but no
  // more than one MPI call can count (an int, of bytes where the ring sends bytes), so
  // that any chunk setting, "one piece" included, moves any tensor.
  int64_t piece_elements(std::size_t element) const {
    const int64_t most = INT_MAX / static_cast<int64_t>(element);
    return std::clamp<int64_t>(chunk_bytes_ / static_cast<int64_t>(element), 1, most);
  }
  int64_t piece_per_rank(std::size_t element) const {  // an int: it is an MPI count
    return std::clamp<int64_t>(chunk_bytes_ / size_ / static_cast<int64_t>(element), 1, INT_MAX);
  }
  // Pieces to cover the longest part (at least one: every rank calls, also for nothing).
  static int64_t piece_count(std::span<const int64_t> counts, int64_t per_rank) {
    const int64_t longest = counts.empty() ? 0 : *std::max_element(counts.begin(), counts.end());
    return std::max<int64_t>(1, (longest + per_rank - 1) / per_rank);
  }
  // Each part's elements from `at` on, at most per_rank.
  static std::vector<int> slice_counts(std::span<const int64_t> counts, int64_t at, int64_t per_rank) {
    std::vector<int> slice(counts.size());
    for (std::size_t r = 0; r < counts.size(); ++r)
      slice[r] = static_cast<int>(std::clamp<int64_t>(counts[r] - at, 0, per_rank));
    return slice;
  }

  static constexpr int kSendrecvTag = 0x6b6f;  // the ring has its own tag
  static constexpr int kAlltoallTag = 0x6b70;

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  int64_t chunk_bytes_;
  std::atomic<uint64_t>* progress_;
  std::vector<std::byte> scratch_;  // the ring's received segment
  std::vector<std::byte> packed_;   // a reducescatter piece's slices, packed
};

// ---- control plane ----------------------------------------------------------------------

class MpiControlChannel final : public ControlChannel {
 public:
  MpiControlChannel(const MpiContext& context, const MpiOptions& options, const Clock& clock)
      : comm_(context.comm()), rank_(context.rank()), size_(context.size()),
        timeout_(options.control_timeout), clock_(clock) {}

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  // Every buffer a pending request uses is a member, never a local: after a timeout the
  // request stays pending inside MPI, and the runtime keeps this channel alive (leaked)
  // so that MPI never writes into freed memory.
  void allreduce_and(std::span<uint64_t> words) override {
    words_.assign(words.begin(), words.end());
    MPI_Request request;
    check_mpi(MPI_Iallreduce(MPI_IN_PLACE, words_.data(), as_int(int64_t(words_.size()), "control"),
                             MPI_UINT64_T, MPI_BAND, comm_, &request),
              "MPI_Iallreduce");
    wait(request, "negotiation (allreduce of ready bits)");
    std::copy(words_.begin(), words_.end(), words.begin());
  }

  std::vector<std::string> gather(const std::string& message, int root) override {
    send_ = message;
    length_ = as_int(int64_t(send_.size()), "control message");
    lengths_.assign(rank_ == root ? size_ : 0, 0);
    MPI_Request request;
    check_mpi(MPI_Igather(&length_, 1, MPI_INT, lengths_.data(), 1, MPI_INT, root, comm_, &request),
              "MPI_Igather");
    wait(request, "negotiation (gather of request sizes)");
    displs_ = message_offsets(lengths_);  // one more than the ranks: the total
    receive_.clear();
    if (rank_ == root) receive_.resize(std::size_t(displs_.back()));
    check_mpi(MPI_Igatherv(send_.data(), length_, MPI_CHAR, receive_.data(), lengths_.data(),
                           displs_.data(), MPI_CHAR, root, comm_, &request),
              "MPI_Igatherv");
    wait(request, "negotiation (gather of requests)");
    std::vector<std::string> messages;
    if (rank_ == root)
      for (int r = 0; r < size_; ++r) messages.push_back(receive_.substr(displs_[r], lengths_[r]));
    return messages;
  }

  void broadcast(std::string& message, int root) override {
    receive_ = message;
    length_ = as_int(static_cast<int64_t>(receive_.size()), "a negotiation response");
    MPI_Request request;
    check_mpi(MPI_Ibcast(&length_, 1, MPI_INT, root, comm_, &request), "MPI_Ibcast");
    wait(request, "negotiation (broadcast of response size)");
    KOLO_CHECK(length_ >= 0, StatusCode::CommFailure,
               "kolo: damaged negotiation message: rank " + std::to_string(root) + " sent a length of " +
                   std::to_string(length_) + " bytes");
    receive_.resize(static_cast<std::size_t>(length_));
    check_mpi(MPI_Ibcast(receive_.data(), length_, MPI_CHAR, root, comm_, &request), "MPI_Ibcast");
    wait(request, "negotiation (broadcast of responses)");
    message = receive_;
  }

 private:
  // Spins briefly (the other ranks are usually a few microseconds away), then sleeps
  // between polls so that a rank waiting for a slower one leaves the CPU to the
  // computation; gives up after the timeout (on the runtime's clock) instead of hanging
  // forever.
  void wait(MPI_Request& request, const char* what) {
    const auto start = clock_.now();
    const auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(100);
    int done = 0;
    for (;;) {
      check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what);
      if (done) return;
      if (std::chrono::steady_clock::now() < spin_until) {
        std::this_thread::yield();  // let a computing thread on this core go first
        continue;
      }
      if (clock_.now() - start > timeout_) throw no_answer(timeout_, what);
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  MPI_Comm comm_;
  int rank_, size_;
  std::chrono::milliseconds timeout_;
  const Clock& clock_;
  std::vector<uint64_t> words_;
  int length_ = 0;
  std::vector<int> lengths_, displs_;
  std::string send_, receive_;
};

}  // namespace

std::vector<int> message_offsets(const std::vector<int>& lengths) {
  std::vector<int> offsets(lengths.size() + 1, 0);
  int64_t at = 0;
  for (std::size_t r = 0; r < lengths.size(); ++r) {
    KOLO_CHECK(lengths[r] >= 0, StatusCode::CommFailure,
               "kolo: damaged negotiation message: rank " + std::to_string(r) + " sent a length of " +
                   std::to_string(lengths[r]) + " bytes");
    at += lengths[r];
    KOLO_CHECK(at <= std::numeric_limits<int>::max(), StatusCode::CommFailure,
               "kolo: damaged negotiation message: the ranks' messages add up to " + std::to_string(at) +
                   " bytes, more than one gather can carry");
    offsets[r + 1] = static_cast<int>(at);
  }
  return offsets;
}

std::unique_ptr<Backend> make_mpi_backend(const MpiContext& context, const MpiOptions& options) {
  return std::make_unique<MpiBackend>(context.comm(), options);
}

std::unique_ptr<Backend> make_mpi_backend(MPI_Comm comm, const MpiOptions& options) {
  return std::make_unique<MpiBackend>(comm, options);
}

std::unique_ptr<ControlChannel> make_mpi_control_channel(const MpiContext& context,
                                                         const MpiOptions& options, const Clock& clock) {
  return std::make_unique<MpiControlChannel>(context, options, clock);
}

}  // namespace kolo::ops
