// The transport over Gloo's TCP transport, for jobs whose membership may change (elastic
// jobs) and for MPI-free jobs (kolorun --gloo): Open MPI 4.1 has no ULFM, so a survivor
// of a lost worker cannot rebuild an MPI communicator, while a new Gloo context is just
// a new rendezvous. (Horovod's elastic mode runs on Gloo for the same reason.)
//
// A worker finds the job through kolorun's rendezvous server (rendezvous/), named by the
// environment kolorun gives it (GlooJob). Each transport is one round of the job: it asks
// the server for this worker's place in the first round after the last one it was part
// of, then connects to every other worker of that round through the server's store. The
// workers then exchange their hosts, which give the node topology.
//
// Host memory only: GPU tensors need the MPI transport (NCCL) for now. A process set is a
// new Gloo context among its ranks (subset()). A failure never leaves anything pending
// (pending_after_failure() is false): Gloo's calls return or throw, each within its timeout.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config.h"
#include "gloo_job.h"
#include "transport.h"

namespace gloo {
class Context;
}

namespace kolo {

class GlooTransport final : public Transport {
 public:
  // Collective over the round's workers: this worker's place in the first round after
  // `last_round` (0: the first), and a connection to each of that round's workers. Waits
  // up to the control timeout for the place and for the others. `last_round` becomes the
  // round placed in before the connections are made: when a worker of that round never
  // arrives, the next try asks for a later round instead of the same dead one.
  GlooTransport(const GlooJob& job, int64_t& last_round, const Config& config);
  ~GlooTransport() override;

  int64_t round() const { return round_; }

  const Topology& topology() const override { return topology_; }
  ops::ControlChannel& control() override { return *control_; }
  std::unique_ptr<ops::Backend> make_host_backend(const DataOptions& options) override;
  std::unique_ptr<ops::GpuParts> make_gpu_parts(bool host_stand_in, const DataOptions& options) override;
  ops::GpuPath make_gpu_path(ops::GpuParts& parts, int device, ops::GpuOperations operations,
                             const DataOptions& options) override;
  std::unique_ptr<Transport> subset(std::span<const int> ranks) override;
  bool pending_after_failure() const override { return false; }
  // Gloo's calls end by themselves: no rank can hang the others past a timeout, so there
  // is nothing for a roll call to find.
  std::vector<int> roll_call(std::chrono::milliseconds) override { return {}; }
  void answer_roll_call() override {}
  // Ends this process only: kolorun ends the others (or, in an elastic job, re-forms it).
  void end_job(int exit_code) override;
  bool failures_end_job() const override;

 private:
  struct Shared;  // the server's client, the device, the settings: shared with subsets
  GlooTransport(std::shared_ptr<Shared> shared, std::string store_prefix, int rank, int size,
                std::vector<std::string> hosts);
  void connect(int rank, int size);

  std::shared_ptr<Shared> shared_;
  std::string store_prefix_;  // this context's keys in the server's store
  int64_t round_ = 0;
  int subsets_made_ = 0;      // names each subset's keys
  std::shared_ptr<gloo::Context> context_;
  std::vector<std::string> host_of_rank_;
  Topology topology_;
  std::unique_ptr<ops::ControlChannel> control_;
};

}  // namespace kolo
