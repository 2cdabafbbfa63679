#include "nccl_backend.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "ops/mpi_backend.h"

namespace kolo::ops::cuda {
namespace {

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::Float32: return ncclFloat32;
    case DType::Float64: return ncclFloat64;
    case DType::Float16: return ncclFloat16;
    case DType::BFloat16: return ncclBfloat16;
    case DType::Int8: return ncclInt8;
    case DType::UInt8: return ncclUint8;
    case DType::Int32: return ncclInt32;
    case DType::Int64: return ncclInt64;
    // NCCL has no int16: it travels as 2-byte words, which only moves may do.
    case DType::Int16: return ncclFloat16;
  }
  return ncclFloat32;
}

// The type for a reduction, which must do integer arithmetic on integers.
ncclDataType_t nccl_reduce_type(DType dtype) {
  if (dtype == DType::Int16)
    throw Error(StatusCode::Unsupported,
                "kolo: NCCL cannot reduce int16 tensors (it has no int16 type); reduce them as int32, or on the CPU");
  return nccl_type(dtype);
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Min: return ncclMin;
    case ReduceOp::Max: return ncclMax;
    case ReduceOp::Product: return ncclProd;
    default: return ncclSum;
  }
}

bool all_equal(std::span<const int64_t> counts) {
  return std::adjacent_find(counts.begin(), counts.end(), std::not_equal_to<>()) == counts.end();
}

std::vector<int64_t> offsets(std::span<const int64_t> counts) {
  std::vector<int64_t> out(counts.size(), 0);
  for (std::size_t i = 1; i < counts.size(); ++i) out[i] = out[i - 1] + counts[i - 1];
  return out;
}

class NcclBackend final : public Backend {
 public:
  NcclBackend(MPI_Comm comm, DeviceOps& ops, std::chrono::milliseconds timeout)
      : ops_(ops), stream_(static_cast<cudaStream_t>(ops.stream())), timeout_(timeout) {
    MPI_Comm_rank(comm, &rank_);
    MPI_Comm_size(comm, &size_);
    ncclUniqueId id{};
    if (rank_ == 0) check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    check_mpi(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm), "MPI_Bcast (NCCL unique id)");
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    check(ncclCommInitRankConfig(&comm_, size_, id, rank_, &config), "ncclCommInitRankConfig");
  }

  ~NcclBackend() override {
    if (comm_ == nullptr) return;
    // Finalize flushes this rank's pending work; if it does not finish in time the
    // communicator is aborted rather than waited on forever.
    ncclResult_t state = ncclCommFinalize(comm_);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (state == ncclInProgress && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess) break;
    }
    if (state == ncclSuccess) (void)ncclCommDestroy(comm_);
    else (void)ncclCommAbort(comm_);
  }

  std::string name() const override { return "nccl"; }
  bool supports(const Device& device) const override { return !device.is_cpu(); }

  // An average (a sum scaled by exactly 1/size) is NCCL's own ncclAvg, which scales inside
  // the collective. Any other scale runs as one scaling kernel on the result, on the same
  // stream (memory bandwidth on the device is cheap next to the network).
  void allreduce(const void* input, void* output, int64_t count, DType dtype, ReduceOp op,
                 double scale) override {
    check_healthy();
    const bool average = is_average(op, scale, dtype);
    check(ncclAllReduce(input, output, static_cast<size_t>(count), nccl_reduce_type(dtype),
                        average ? ncclAvg : nccl_op(op), comm_, stream_),
          "ncclAllReduce");
    if (scale != 1.0 && !average) scale_result(output, count, dtype, scale);
  }

  void allgatherv(const void* input, void* output, std::span<const int64_t> counts, DType dtype) override {
    check_healthy();
    if (all_equal(counts)) {
      check(ncclAllGather(input, output, static_cast<size_t>(counts[0]), nccl_type(dtype), comm_, stream_),
            "ncclAllGather");
      return;
    }
    // Uneven parts: every rank broadcasts its own into place, all in one group.
    const std::vector<int64_t> at = offsets(counts);
    const std::size_t element = dtype_size(dtype);
    auto* out = static_cast<std::byte*>(output);
    grouped("ncclBroadcast (allgatherv)", [&] {
      for (int r = 0; r < size_; ++r) {
        if (counts[r] == 0) continue;
        std::byte* place = out + at[r] * int64_t(element);
        const void* send = r == rank_ ? input : place;
        check(ncclBroadcast(send, place, static_cast<size_t>(counts[r]), nccl_type(dtype), r, comm_, stream_),
              "ncclBroadcast");
      }
    });
  }

  void broadcast(void* data, int64_t count, DType dtype, int root) override {
    check_healthy();
    check(ncclBroadcast(data, data, static_cast<size_t>(count), nccl_type(dtype), root, comm_, stream_),
          "ncclBroadcast");
  }

  void alltoallv(const void* input, std::span<const int64_t> send_counts, void* output,
                 std::span<const int64_t> recv_counts, DType dtype) override {
    check_healthy();
    const std::vector<int64_t> send_at = offsets(send_counts), recv_at = offsets(recv_counts);
    const int64_t element = static_cast<int64_t>(dtype_size(dtype));
    grouped("ncclSend/ncclRecv (alltoallv)", [&] {
      for (int r = 0; r < size_; ++r) {
        if (send_counts[r] > 0)
          check(ncclSend(static_cast<const std::byte*>(input) + send_at[r] * element,
                         static_cast<size_t>(send_counts[r]), nccl_type(dtype), r, comm_, stream_),
                "ncclSend");
        if (recv_counts[r] > 0)
          check(ncclRecv(static_cast<std::byte*>(output) + recv_at[r] * element,
                         static_cast<size_t>(recv_counts[r]), nccl_type(dtype), r, comm_, stream_),
                "ncclRecv");
      }
    });
  }

  void reducescatter(const void* input, void* output, std::span<const int64_t> counts, DType dtype,
                     ReduceOp op, double scale) override {
    check_healthy();
    if (all_equal(counts)) {
      const bool average = is_average(op, scale, dtype);
      check(ncclReduceScatter(input, output, static_cast<size_t>(counts[0]), nccl_reduce_type(dtype),
                              average ? ncclAvg : nccl_op(op), comm_, stream_),
            "ncclReduceScatter");
      if (scale != 1.0 && !average) scale_result(output, counts[0], dtype, scale);
      return;
    }
    // Uneven parts: one reduce per part, rooted at the rank that keeps it.
    const std::vector<int64_t> at = offsets(counts);
    const int64_t element = static_cast<int64_t>(dtype_size(dtype));
    grouped("ncclReduce (reducescatter)", [&] {
      for (int r = 0; r < size_; ++r) {
        if (counts[r] == 0) continue;
        check(ncclReduce(static_cast<const std::byte*>(input) + at[r] * element, output,
                         static_cast<size_t>(counts[r]), nccl_reduce_type(dtype), nccl_op(op), r, comm_, stream_),
              "ncclReduce");
      }
    });
    if (scale != 1.0) scale_result(output, counts[static_cast<std::size_t>(rank_)], dtype, scale);
  }

  void barrier() override {
    if (!barrier_word_) barrier_word_ = ops_.allocate(sizeof(int32_t));
    allreduce(barrier_word_.get(), barrier_word_.get(), 1, DType::Int32, ReduceOp::Sum, 1.0);
    wait_for(*ops_.record(), timeout_, "a barrier");
  }

 private:
  // Runs the calls `body` makes as one NCCL group.
  template <typename Body>
  void grouped(const char* what, Body&& body) {
    check(ncclGroupStart(), "ncclGroupStart");
    try {
      body();
    } catch (...) {
      (void)ncclGroupEnd();
      throw;
    }
    check(ncclGroupEnd(), what);
  }

  // A sum scaled by exactly 1/size, which ncclAvg computes inside the collective.
  bool is_average(ReduceOp op, double scale, DType dtype) const {
    return op == ReduceOp::Sum && scale != 1.0 && scale == 1.0 / size_ && is_floating_point(dtype);
  }

  // output *= scale, enqueued on the stream after the collective that wrote it.
  void scale_result(void* output, int64_t count, DType dtype, double scale) {
    if (count == 0) return;
    const CopyPiece piece{output, output, count};
    ops_.convert({&piece, 1}, dtype, dtype, scale);
  }

  // An asynchronous failure (a peer died, a network error) shows here first: report it
  // instead of enqueueing more work behind a collective that will never finish.
  void check_healthy() {
    ncclResult_t state = ncclSuccess;
    if (comm_ == nullptr) throw Error(StatusCode::CommFailure, "kolo: the NCCL communicator was aborted after a failure");
    if (ncclCommGetAsyncError(comm_, &state) == ncclSuccess && state != ncclSuccess && state != ncclInProgress)
      check(state, "an earlier NCCL operation (asynchronous error)");
  }

  // A non-blocking communicator may answer ncclInProgress: then wait, with a deadline,
  // until the call has been taken (enqueued), or failed.
  void check(ncclResult_t result, const char* what) {
    if (result == ncclInProgress && comm_ != nullptr) {
      const auto deadline = std::chrono::steady_clock::now() + timeout_;
      while (result == ncclInProgress) {
        if (std::chrono::steady_clock::now() > deadline) {
          (void)ncclCommAbort(comm_);
          comm_ = nullptr;
          throw Error(StatusCode::CommFailure,
                      std::string("kolo: NCCL did not finish ") + what + " within the control timeout "
                      "(KOLO_CONTROL_TIMEOUT_SECONDS): a rank has died, hung, or cannot reach the others");
        }
        std::this_thread::yield();
        if (ncclResult_t e = ncclCommGetAsyncError(comm_, &result); e != ncclSuccess) result = e;
      }
    }
    if (result == ncclSuccess) return;
    std::string detail = comm_ != nullptr ? ncclGetLastError(comm_) : "";
    // A CUDA call that failed inside NCCL is the device's error; the others (system,
    // network, remote, usage) are the communication's.
    const StatusCode code = result == ncclUnhandledCudaError ? StatusCode::DeviceError : StatusCode::CommFailure;
    throw Error(code, std::string("kolo: NCCL error in ") + what + ": " + ncclGetErrorString(result) +
                          (detail.empty() ? "" : " (" + detail + ")"));
  }

  DeviceOps& ops_;
  cudaStream_t stream_;
  std::chrono::milliseconds timeout_;
  int rank_ = 0, size_ = 1;
  ncclComm_t comm_ = nullptr;
  std::shared_ptr<void> barrier_word_;
};

}  // namespace

std::unique_ptr<Backend> make_nccl_backend(MPI_Comm comm, DeviceOps& ops, std::chrono::milliseconds timeout) {
  return std::make_unique<NcclBackend>(comm, ops, timeout);
}

}  // namespace kolo::ops::cuda
