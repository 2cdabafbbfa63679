#include "gloo_transport.h"

#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>

#include "kolo/check.h"
#include "ops/gloo_backend.h"

namespace kolo {
namespace {

// Gloo's rendezvous store over kolorun's server, each key under this context's prefix.
class ServerStore final : public gloo::rendezvous::Store {
 public:
  ServerStore(rendezvous::Client& client, std::string prefix, std::chrono::milliseconds timeout)
      : client_(client), prefix_(std::move(prefix)), timeout_(timeout) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    client_.set(prefix_ + key, std::string(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    const std::string value = client_.wait_for(prefix_ + key, timeout_);
    return {value.begin(), value.end()};
  }
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    for (const std::string& key : keys) client_.wait_for(prefix_ + key, timeout);
  }

 private:
  rendezvous::Client& client_;
  std::string prefix_;
  std::chrono::milliseconds timeout_;
};

}  // namespace

struct GlooTransport::Shared {
  GlooJob job;
  rendezvous::Client client;
  std::shared_ptr<gloo::transport::Device> device;
  ops::GlooOptions options;
  Shared(const GlooJob& j, const Config& config) : job(j), client(j.server) {
    options.control_timeout = config.control_timeout();
    options.data_timeout = config.data_timeout();
  }
};

GlooTransport::GlooTransport(const GlooJob& job, int64_t& last_round, const Config& config)
    : shared_(std::make_shared<Shared>(job, config)) {
  const std::chrono::milliseconds place_timeout =
      std::max(shared_->options.control_timeout, Config::milliseconds(job.place_timeout_seconds));
  const rendezvous::Place place = shared_->client.wait_for_place(job.host, job.slot, last_round, place_timeout);
  round_ = last_round = place.round;
  gloo::transport::tcp::attr attr;
  // Listen on the address by which this host reached kolorun: the others reach it there too.
  if (job.iface.empty()) attr.hostname = shared_->client.local_address();
  else attr.iface = job.iface;
  shared_->device = gloo::transport::tcp::CreateDevice(attr);
  store_prefix_ = "round" + std::to_string(round_) + "/";
  connect(place.rank, place.size);
  // Every worker's host, for the node topology.
  std::vector<std::string> hosts = control_->gather(job.host, 0);
  std::string joined;
  for (const std::string& h : hosts) joined += h + '\n';
  control_->broadcast(joined, 0);
  for (size_t at = 0; at < joined.size();) {
    const size_t end = joined.find('\n', at);
    host_of_rank_.push_back(joined.substr(at, end - at));
    at = end + 1;
  }
  topology_ = topology_from_hosts(host_of_rank_, place.rank);
}

GlooTransport::GlooTransport(std::shared_ptr<Shared> shared, std::string store_prefix, int rank, int size,
                             std::vector<std::string> hosts)
    : shared_(std::move(shared)), store_prefix_(std::move(store_prefix)), host_of_rank_(std::move(hosts)) {
  connect(rank, size);
  topology_ = topology_from_hosts(host_of_rank_, rank);
}

GlooTransport::~GlooTransport() = default;

void GlooTransport::connect(int rank, int size) {
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
  context->setTimeout(shared_->options.control_timeout);
  ServerStore store(shared_->client, store_prefix_, shared_->options.control_timeout);
  try {
    context->connectFullMesh(store, shared_->device);
  } catch (const gloo::Exception& e) {
    throw Error(StatusCode::CommFailure, "kolo: rank " + std::to_string(rank) + " of " + std::to_string(size) +
                                             " could not connect to the others through Gloo: " + e.what());
  }
  context_ = std::move(context);
  control_ = ops::make_gloo_control_channel(context_, shared_->options);
}

std::unique_ptr<ops::Backend> GlooTransport::make_host_backend(const DataOptions& options) {
  KOLO_CHECK(!options.hierarchical.any(), StatusCode::Unsupported,
             "kolo: the hierarchical collectives need the MPI transport; a Gloo job runs the flat ones "
             "(unset KOLO_HIERARCHICAL_ALLREDUCE and KOLO_HIERARCHICAL_ALLGATHER)");
  return ops::make_gloo_backend(context_, shared_->options);
}

std::unique_ptr<ops::GpuParts> GlooTransport::make_gpu_parts(bool, const DataOptions&) { return nullptr; }

ops::GpuPath GlooTransport::make_gpu_path(ops::GpuParts&, int, ops::GpuOperations, const DataOptions&) {
  throw Error(StatusCode::Unsupported,
              "kolo: GPU tensors need the MPI transport (NCCL or host-staged MPI); this job runs over Gloo, which "
              "kolo uses for host memory only: copy the tensor to the host, or launch without --gloo and elastic flags");
}

std::unique_ptr<Transport> GlooTransport::subset(std::span<const int> ranks) {
  check_subset(ranks, size());
  const std::string prefix = store_prefix_ + "set" + std::to_string(++subsets_made_) + "/";
  auto at = std::find(ranks.begin(), ranks.end(), rank());
  if (at == ranks.end()) return nullptr;
  std::vector<std::string> hosts;
  for (int q : ranks) hosts.push_back(host_of_rank_.at(size_t(q)));
  return std::unique_ptr<Transport>(
      new GlooTransport(shared_, prefix, int(at - ranks.begin()), int(ranks.size()), std::move(hosts)));
}

bool GlooTransport::failures_end_job() const { return !shared_->job.elastic; }

void GlooTransport::end_job(int exit_code) {
  std::fflush(nullptr);
  std::_Exit(exit_code);
}

}  // namespace kolo
