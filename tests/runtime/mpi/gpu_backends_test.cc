// The backends the GPU path is built from, over real MPI with host memory standing in for
// device memory: the hierarchical allreduce on a forced node layout (2 "nodes" of 2 ranks
// at np 4) against the flat allreduce, and the host-staged backend (memcpy as the copier,
// tiny pipeline pieces) against plain MPI, for every collective; and the codes the GPU
// path's set-up fails with when a rank's device cannot be set up.
#include <numeric>
#include <optional>

#include "ops/device.h"
#include "ops/gpu_path.h"
#include "ops/hierarchical_backend.h"
#include "ops/mpi_backend.h"
#include "ops/staged_backend.h"
#include "support/mpi_util.h"
#include "support/status.h"

using kolo::DType;
using kolo::ReduceOp;
using namespace kolo_test;

namespace {

// Small integers: every sum, min, max and product of up to 4 ranks is exact in every
// dtype, so any reduction order gives the same bits.
double value(DType d, ReduceOp op, int r, int64_t i) {
  if (op == ReduceOp::Product) {
    if (d == DType::UInt8) return 1 + (r + i) % 3;
    static const double v[4] = {-2, -1, 1, 2};
    return v[(r + 2 * i) % 4];
  }
  const double base = double((r * 7 + i * 3) % 11);
  return d == DType::UInt8 ? base : base - 5;
}

Buffer filled(DType d, ReduceOp op, int64_t count, int r) {
  Buffer b(d, {count});
  for (int64_t i = 0; i < count; ++i) b.set(i, value(d, op, r, i));
  return b;
}

int forced_local_size(int n) { return n % 2 == 0 ? 2 : n; }

}  // namespace

TEST_CASE("a forced node layout splits the ranks into equal consecutive nodes", "[hierarchical]") {
  const int local = forced_local_size(size());
  kolo::ops::MpiContext context(MPI_COMM_WORLD, {local});
  CHECK(context.local_size() == local);
  CHECK(context.local_rank() == rank() % local);
  CHECK(context.cross_size() == size() / local);
  CHECK(context.cross_rank() == rank() / local);
  CHECK(context.homogeneous());
}

TEST_CASE("hierarchical allreduce on a forced node layout equals the flat allreduce", "[hierarchical]") {
  kolo::ops::MpiContext context(MPI_COMM_WORLD, {forced_local_size(size())});
  const kolo::ops::MpiOptions options;
  auto host = kolo::ops::make_cpu_ops();
  kolo::ops::HierarchicalParts parts;
  parts.local = kolo::ops::make_mpi_backend(context.local_comm(), options);
  parts.cross = kolo::ops::make_mpi_backend(context.cross_comm(), options);
  parts.flat = kolo::ops::make_mpi_backend(context, options);
  parts.memory = host.get();
  parts.placement = context.placement();
  parts.routes.allreduce = true;
  auto hierarchical = kolo::ops::make_hierarchical_backend(std::move(parts));
  auto flat = kolo::ops::make_mpi_backend(context, options);

  for (DType d : all_dtypes())
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max, ReduceOp::Product})
      for (int64_t count : {0, 1, 2, 3, 4, 5, 7, 64, 1001, 100003}) {
        INFO(kolo::dtype_name(d) << " " << kolo::op_name(op) << " count " << count);
        Buffer in = filled(d, op, count, rank());
        Buffer reference(d, {count}), out(d, {count});
        flat->allreduce(in.data(), reference.data(), count, d, op);
        hierarchical->allreduce(in.data(), out.data(), count, d, op);
        REQUIRE(out.bytes() == reference.bytes());
        hierarchical->allreduce(in.data(), in.data(), count, d, op);  // in place
        REQUIRE(in.bytes() == reference.bytes());
      }
}

namespace {

std::unique_ptr<kolo::ops::Backend> staged_mpi(const kolo::ops::MpiContext& context, int64_t piece_bytes) {
  kolo::ops::StagingOptions staging;
  staging.rank = context.rank();
  staging.piece_bytes = piece_bytes;
  return kolo::ops::make_staged_backend(kolo::ops::make_mpi_backend(context, {}), kolo::ops::make_host_copier(),
                                        staging);
}

}  // namespace

TEST_CASE("host-staged allreduce, pipelined in small pieces, equals plain MPI", "[staged]") {
  kolo::ops::MpiContext context(MPI_COMM_WORLD);
  auto plain = kolo::ops::make_mpi_backend(context, {});
  for (int64_t piece : {4, 64, 1 << 20})
    for (DType d : {DType::Float32, DType::Float16, DType::Int64})
      for (int64_t count : {0, 1, 15, 16, 17, 1000}) {
        INFO(kolo::dtype_name(d) << " count " << count << " piece " << piece << " bytes");
        auto staged = staged_mpi(context, piece);
        Buffer in = filled(d, ReduceOp::Sum, count, rank());
        Buffer reference(d, {count}), out(d, {count});
        plain->allreduce(in.data(), reference.data(), count, d, ReduceOp::Sum);
        staged->allreduce(in.data(), out.data(), count, d, ReduceOp::Sum);
        REQUIRE(out.bytes() == reference.bytes());
        staged->allreduce(in.data(), in.data(), count, d, ReduceOp::Max);
        Buffer again = filled(d, ReduceOp::Sum, count, rank());
        plain->allreduce(again.data(), again.data(), count, d, ReduceOp::Max);
        REQUIRE(in.bytes() == again.bytes());
      }
}

TEST_CASE("host-staged allgather, broadcast, alltoall and reducescatter equal plain MPI", "[staged]") {
  kolo::ops::MpiContext context(MPI_COMM_WORLD);
  auto plain = kolo::ops::make_mpi_backend(context, {});
  auto staged = staged_mpi(context, 64);
  const int n = size(), r = rank();
  const DType d = DType::Int32;

  std::vector<int64_t> counts(n);  // uneven: rank q gives q + 1 elements
  for (int q = 0; q < n; ++q) counts[q] = q + 1;
  const int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t{0});
  Buffer mine = filled(d, ReduceOp::Sum, counts[r], r), gathered(d, {total}), reference(d, {total});
  staged->allgatherv(mine.data(), gathered.data(), counts, d);
  plain->allgatherv(mine.data(), reference.data(), counts, d);
  CHECK(gathered.bytes() == reference.bytes());

  Buffer b = filled(d, ReduceOp::Sum, 33, r), b_ref = b;
  staged->broadcast(b.data(), 33, d, n - 1);
  plain->broadcast(b_ref.data(), 33, d, n - 1);
  CHECK(b.bytes() == b_ref.bytes());
  CHECK(b.bytes() == filled(d, ReduceOp::Sum, 33, n - 1).bytes());

  std::vector<int64_t> send(n), recv(n);  // rank r sends q + r + 1 elements to rank q
  for (int q = 0; q < n; ++q) {
    send[q] = q + r + 1;
    recv[q] = r + q + 1;
  }
  const int64_t sent = std::accumulate(send.begin(), send.end(), int64_t{0});
  const int64_t received = std::accumulate(recv.begin(), recv.end(), int64_t{0});
  Buffer a = filled(d, ReduceOp::Sum, sent, r), a_out(d, {received}), a_ref(d, {received});
  staged->alltoallv(a.data(), send, a_out.data(), recv, d);
  plain->alltoallv(a.data(), send, a_ref.data(), recv, d);
  CHECK(a_out.bytes() == a_ref.bytes());

  Buffer s = filled(d, ReduceOp::Sum, total, r), s_out(d, {counts[r]}), s_ref(d, {counts[r]});
  staged->reducescatter(s.data(), s_out.data(), counts, d, ReduceOp::Sum);
  plain->reducescatter(s.data(), s_ref.data(), counts, d, ReduceOp::Sum);
  CHECK(s_out.bytes() == s_ref.bytes());

  staged->barrier();
}

TEST_CASE("MPI allgatherv takes its input in place, at this rank's part of the output", "[staged]") {
  kolo::ops::MpiContext context(MPI_COMM_WORLD);
  auto plain = kolo::ops::make_mpi_backend(context, {});
  const int n = size();
  const std::vector<int64_t> counts(n, 3);
  Buffer out(DType::Float32, {3 * n});
  for (int64_t i = 0; i < 3; ++i) out.set(3 * rank() + i, rank() * 10 + i);
  plain->allgatherv(static_cast<std::byte*>(out.data()) + 3 * rank() * 4, out.data(), counts, DType::Float32);
  for (int q = 0; q < n; ++q)
    for (int64_t i = 0; i < 3; ++i) CHECK(out.get(3 * q + i) == q * 10 + i);
}

namespace {

// The host stand-in, whose device set-up fails with `failure` (if any) and which has NCCL
// or not as told.
class FailingParts final : public kolo::ops::GpuParts {
 public:
  FailingParts(std::optional<kolo::Error> failure, bool nccl)
      : inner_(kolo::ops::make_host_stand_in_parts({})), failure_(std::move(failure)), nccl_(nccl) {}
  std::string name() const override { return inner_->name(); }
  bool has_nccl() const override { return nccl_; }
  std::string check(const kolo::TensorView& view) override { return inner_->check(view); }
  std::shared_ptr<kolo::ops::Event> record_ready(const kolo::Device& d, void* stream) override {
    return inner_->record_ready(d, stream);
  }
  int device_count() override { return inner_->device_count(); }
  void copy(void* dst, const void* src, std::size_t bytes) override { inner_->copy(dst, src, bytes); }
  std::unique_ptr<kolo::ops::DeviceOps> make_ops(int device) override {
    if (failure_) throw *failure_;
    return inner_->make_ops(device);
  }
  std::unique_ptr<kolo::ops::StagingCopier> make_copier(kolo::ops::DeviceOps& ops) override {
    return inner_->make_copier(ops);
  }
  std::unique_ptr<kolo::ops::Backend> make_collectives(MPI_Comm comm, kolo::ops::DeviceOps& ops,
                                                       std::chrono::milliseconds timeout) override {
    return inner_->make_collectives(comm, ops, timeout);
  }

 private:
  std::unique_ptr<kolo::ops::GpuParts> inner_;
  std::optional<kolo::Error> failure_;
  bool nccl_;
};

}  // namespace

TEST_CASE("GPU set-up: a rank whose device fails throws its own error, the others the highest failed code",
          "[gpu-setup]") {
  kolo::ops::MpiContext context(MPI_COMM_WORLD);
  // The last rank's device fails; from 3 ranks on, rank 0's too, with a code above it.
  const bool two_fail = size() >= 3;
  std::optional<kolo::Error> failure;
  if (rank() == size() - 1)
    failure = kolo::Error(kolo::StatusCode::DeviceError,
                          "kolo: CUDA error in cudaSetDevice: rank " + std::to_string(rank()));
  else if (rank() == 0 && two_fail)
    failure = kolo::Error(kolo::StatusCode::Unsupported, "kolo: rank 0's device cannot be used");
  FailingParts parts(failure, true);
  std::optional<kolo::Error> thrown;
  try {
    (void)kolo::ops::make_gpu_path(parts, context, 0, {});
  } catch (const kolo::Error& e) {
    thrown = e;
  }
  REQUIRE(thrown);
  INFO(kolo::status_code_name(thrown->code()) << ": " << thrown->what());
  if (failure) {
    CHECK(thrown->code() == failure->code());
    CHECK(std::string(thrown->what()) == failure->what());
  } else {
    CHECK(thrown->code() == (two_fail ? kolo::StatusCode::Unsupported : kolo::StatusCode::DeviceError));
    CHECK_THAT(thrown->what(), Catch::Matchers::Contains("GPU set-up failed on another rank"));
  }
}

TEST_CASE("GPU set-up: every rank's device set up, the path is made, NCCL asked of parts without it is Unsupported",
          "[gpu-setup]") {
  kolo::ops::MpiContext context(MPI_COMM_WORLD);
  FailingParts with_nccl(std::nullopt, true);
  kolo::ops::GpuPath path = kolo::ops::make_gpu_path(with_nccl, context, 0, {});
  REQUIRE(path.backend);
  int value = rank() + 1;
  path.backend->allreduce(&value, &value, 1, DType::Int32, ReduceOp::Sum);
  CHECK(value == size() * (size() + 1) / 2);

  FailingParts without_nccl(std::nullopt, false);
  CHECK_THROWS_MATCHES(kolo::ops::make_gpu_path(without_nccl, context, 0, {}), kolo::Error,
                       kolo_test::HasCode(kolo::StatusCode::Unsupported, "this build of kolo has no NCCL"));
}
