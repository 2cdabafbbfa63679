#include "mpi_transport.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>

#include "kolo/check.h"

namespace kolo {
namespace {

// How long MPI_Abort may take before the process ends itself: the runtime system may be
// unable to act on it (its daemon cut off from mpirun), and the process must end anyway.
constexpr std::chrono::seconds kAbortBound{10};

}  // namespace

MpiTransport::MpiTransport(MPI_Comm comm, const Config& config, const Clock& clock)
    : MpiTransport(comm, config.test_local_size, config.control_timeout(), clock) {}

MpiTransport::MpiTransport(MPI_Comm comm, int forced_local_size, std::chrono::milliseconds control_timeout,
                           const Clock& clock)
    : clock_(clock), control_timeout_(control_timeout),
      context_(std::make_unique<ops::MpiContext>(comm, ops::TopologyOptions{forced_local_size})),
      host_scratch_(ops::make_cpu_ops()), roll_call_(context_->comm()) {
  const ops::MpiContext& c = *context_;
  topology_ = {c.rank(), c.size(), c.local_rank(), c.local_size(), c.cross_rank(), c.cross_size(), c.homogeneous()};
  control_ = ops::make_mpi_control_channel(c, mpi_options({}), clock_);
}

MpiTransport::~MpiTransport() = default;

ops::MpiOptions MpiTransport::mpi_options(const DataOptions& options) const {
  ops::MpiOptions mpi;
  mpi.allreduce_chunk_bytes = options.allreduce_chunk_bytes;
  mpi.control_timeout = control_timeout_;
  mpi.progress = options.progress;
  return mpi;
}

void MpiTransport::end_job(int exit_code) {
  std::thread([exit_code] {
    std::this_thread::sleep_for(kAbortBound);
    std::_Exit(exit_code);
  }).detach();
  MPI_Abort(context_->comm(), exit_code);
  std::_Exit(exit_code);
}

std::unique_ptr<ops::Backend> MpiTransport::make_host_backend(const DataOptions& options) {
  const ops::MpiContext& c = *context_;
  const ops::MpiOptions mpi = mpi_options(options);
  const ops::HierarchicalRoutes& hierarchical = options.hierarchical;
  // The allreduce's cross-node step pairs local rank i of every node; the allgather's
  // involves only local rank 0, so it takes nodes of any size.
  KOLO_CHECK(!hierarchical.allreduce || c.homogeneous(), StatusCode::Unsupported,
             "kolo: KOLO_HIERARCHICAL_ALLREDUCE needs the same number of ranks on every node, but nodes run from " +
                 std::to_string(c.smallest_node()) + " to " + std::to_string(c.largest_node()) + " ranks");
  if (!hierarchical.any()) return ops::make_mpi_backend(c, mpi);
  ops::HierarchicalParts h;
  h.local = ops::make_mpi_backend(c.local_comm(), mpi);
  h.cross = ops::make_mpi_backend(c.cross_comm(), mpi);
  h.flat = ops::make_mpi_backend(c, mpi);
  h.memory = host_scratch_.get();
  h.placement = c.placement();
  h.routes = hierarchical;
  return ops::make_hierarchical_backend(std::move(h));
}

std::unique_ptr<ops::GpuParts> MpiTransport::make_gpu_parts(bool host_stand_in, const DataOptions& options) {
  return host_stand_in ? ops::make_host_stand_in_parts(mpi_options(options)) : ops::make_cuda_parts();
}

ops::GpuPath MpiTransport::make_gpu_path(ops::GpuParts& parts, int device, ops::GpuOperations operations,
                                         const DataOptions& options) {
  ops::GpuPathOptions gpu;
  gpu.operations = operations;
  gpu.hierarchical = options.hierarchical;
  gpu.mpi = mpi_options(options);
  gpu.timeout = control_timeout_;
  return ops::make_gpu_path(parts, *context_, device, gpu);
}

std::unique_ptr<Transport> MpiTransport::subset(std::span<const int> ranks) {
  check_subset(ranks, size());
  const bool member = std::binary_search(ranks.begin(), ranks.end(), rank());
  MPI_Comm split = MPI_COMM_NULL;
  ops::check_mpi(MPI_Comm_split(context_->comm(), member ? 0 : MPI_UNDEFINED, rank(), &split),
                 "MPI_Comm_split (subset)");
  if (!member) return nullptr;
  // A set takes MPI's node split: a forced layout (KOLO_TEST_LOCAL_SIZE) is the whole job's.
  std::unique_ptr<Transport> transport(new MpiTransport(split, 0, control_timeout_, clock_));
  MPI_Comm_free(&split);
  return transport;
}

}  // namespace kolo
