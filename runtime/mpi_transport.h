// The transport over MPI: kolo's own duplicate of the communicator it was given (so that
// the program's MPI traffic never interleaves with kolo's), the node topology (MPI's
// shared-memory split, or KOLO_TEST_LOCAL_SIZE), the non-blocking control channel with its
// deadline, and the data collectives: MPI or the hierarchical collectives over MPI for host
// memory, NCCL or host-staged MPI for GPU memory (ops/gpu_path.h).
#pragma once

#include <mpi.h>

#include <memory>

#include "clock.h"
#include "config.h"
#include "mpi_roll_call.h"
#include "ops/mpi_backend.h"
#include "transport.h"

namespace kolo {

class MpiTransport final : public Transport {
 public:
  // Collective over `comm`. Reads the control timeout and KOLO_TEST_LOCAL_SIZE from
  // `config` (rank 0's node layout applies to every rank); the control channel's waits read
  // `clock`, which must outlive the transport.
  MpiTransport(MPI_Comm comm, const Config& config, const Clock& clock);
  ~MpiTransport() override;

  const Topology& topology() const override { return topology_; }
  ops::ControlChannel& control() override { return *control_; }
  std::unique_ptr<ops::Backend> make_host_backend(const DataOptions& options) override;
  std::unique_ptr<ops::GpuParts> make_gpu_parts(bool host_stand_in, const DataOptions& options) override;
  ops::GpuPath make_gpu_path(ops::GpuParts& parts, int device, ops::GpuOperations operations,
                             const DataOptions& options) override;
  std::unique_ptr<Transport> subset(std::span<const int> ranks) override;
  // MPI cannot cancel a collective.
  bool pending_after_failure() const override { return true; }
  std::vector<int> roll_call(std::chrono::milliseconds bound) override { return roll_call_.ask(bound, clock_); }
  void answer_roll_call() override { roll_call_.answer(); }
  void end_job(int exit_code) override;

 private:
  MpiTransport(MPI_Comm comm, int forced_local_size, std::chrono::milliseconds control_timeout,
               const Clock& clock);
  ops::MpiOptions mpi_options(const DataOptions& options) const;

  const Clock& clock_;
  std::chrono::milliseconds control_timeout_;
  std::unique_ptr<ops::MpiContext> context_;
  Topology topology_;
  std::unique_ptr<ops::ControlChannel> control_;
  std::unique_ptr<ops::DeviceOps> host_scratch_;  // the hierarchical collectives' buffers
  MpiRollCall roll_call_;
};

}  // namespace kolo
