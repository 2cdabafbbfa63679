#include "gpu_path.h"

#include <cstring>
#include <optional>

#include "kolo/check.h"

namespace kolo::ops {

const char* gpu_operations_name(GpuOperations operations) {
  return operations == GpuOperations::Nccl ? "NCCL" : "MPI";
}

namespace {

// Host memory in the role of device memory: synchronous work, but events like a GPU's,
// so that the runtime takes its GPU path (deferred completion) all the same.
class StandInOps final : public DeviceOps {
 public:
  explicit StandInOps(int device) : cpu_(make_cpu_ops(Device::cuda(device))) {}
  Device device() const override { return cpu_->device(); }
  void convert(std::span<const CopyPiece> pieces, DType from, DType to, double factor) override {
    cpu_->convert(pieces, from, to, factor);
  }
  std::shared_ptr<void> allocate(std::size_t bytes) override { return cpu_->allocate(bytes); }
  void wait(Event& event) override { wait_for(event, std::chrono::seconds(300), "a tensor's readiness"); }
  std::shared_ptr<Event> record() override { return reached_event(); }

 private:
  std::unique_ptr<DeviceOps> cpu_;
};

class HostStandInParts final : public GpuParts {
 public:
  explicit HostStandInParts(const MpiOptions& mpi) : mpi_(mpi) {}
  std::string name() const override { return "host memory standing in for a GPU (KOLO_TEST_HOST_GPU)"; }
  bool has_nccl() const override { return true; }
  std::string check(const TensorView&) override { return ""; }
  std::shared_ptr<Event> record_ready(const Device&, void*) override { return reached_event(); }
  int device_count() override { return 1; }
  void copy(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
  std::unique_ptr<DeviceOps> make_ops(int device) override { return std::make_unique<StandInOps>(device); }
  std::unique_ptr<StagingCopier> make_copier(DeviceOps&) override { return make_host_copier(); }
  std::unique_ptr<Backend> make_collectives(MPI_Comm comm, DeviceOps&, std::chrono::milliseconds) override {
    return make_mpi_backend(comm, mpi_);
  }

 private:
  MpiOptions mpi_;
};

int comm_rank(MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  return rank;
}

}  // namespace

std::unique_ptr<GpuParts> make_host_stand_in_parts(const MpiOptions& mpi) {
  return std::make_unique<HostStandInParts>(mpi);
}

#ifndef KOLO_WITH_CUDA
// A build without CUDA has no GPU parts (with CUDA, cuda/cuda_parts.cc makes them): the
// runtime then refuses GPU tensors at submission.
std::unique_ptr<GpuParts> make_cuda_parts() { return nullptr; }
#endif

GpuPath make_gpu_path(GpuParts& parts, const MpiContext& context, int device, const GpuPathOptions& options) {
  GpuPath path;
  std::optional<Error> failure;
  try {
    path.ops = parts.make_ops(device);
  } catch (const Error& e) {
    failure = e;
  } catch (const std::exception& e) {
    failure = Error(StatusCode::Internal, std::string("kolo: internal error in the GPU set-up: ") + e.what());
  }
  // The ranks agree on a code (Ok: 0 where all succeeded; the highest of the failed ranks'
  // codes otherwise), so that they all take the same way on: a rank that failed throws its
  // own error, the others the agreed code.
  int code = static_cast<int>(failure ? failure->code() : StatusCode::Ok);
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &code, 1, MPI_INT, MPI_MAX, context.comm()), "MPI_Allreduce (GPU set-up)");
  if (failure) throw *failure;
  if (code != static_cast<int>(StatusCode::Ok))
    throw Error(static_cast<StatusCode>(code), "kolo: GPU set-up failed on another rank (see its message)");

  const auto staged = [&](MPI_Comm comm, std::unique_ptr<Backend> host) {
    StagingOptions staging;
    staging.rank = comm_rank(comm);
    staging.piece_bytes = options.staging_piece_bytes;
    staging.timeout = options.timeout;
    return make_staged_backend(std::move(host), parts.make_copier(*path.ops), staging);
  };
  const auto mpi = [&](MPI_Comm comm) { return make_mpi_backend(comm, options.mpi); };

  if (options.operations == GpuOperations::Nccl) {
    KOLO_CHECK(parts.has_nccl(), StatusCode::Unsupported,
               "kolo: KOLO_GPU_OPERATIONS=NCCL, but this build of kolo has no NCCL (use MPI)");
    std::unique_ptr<Backend> flat = parts.make_collectives(context.comm(), *path.ops, options.timeout);
    if (!options.hierarchical.any()) {
      path.backend = std::move(flat);
      return path;
    }
    HierarchicalParts h;
    h.local = parts.make_collectives(context.local_comm(), *path.ops, options.timeout);
    h.cross = staged(context.cross_comm(), mpi(context.cross_comm()));
    h.flat = std::move(flat);
    h.memory = path.ops.get();
    h.placement = context.placement();
    h.routes = options.hierarchical;
    path.backend = make_hierarchical_backend(std::move(h));
    return path;
  }

  std::unique_ptr<Backend> host = mpi(context.comm());
  if (options.hierarchical.any()) {
    path.host_ops = make_cpu_ops();
    HierarchicalParts h;
    h.local = mpi(context.local_comm());
    h.cross = mpi(context.cross_comm());
    h.flat = std::move(host);
    h.memory = path.host_ops.get();
    h.placement = context.placement();
    h.routes = options.hierarchical;
    host = make_hierarchical_backend(std::move(h));
  }
  path.backend = staged(context.comm(), std::move(host));
  return path;
}

}  // namespace kolo::ops
