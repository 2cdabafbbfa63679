// What a worker of a Gloo job (gloo_transport.h) knows before it connects: where kolorun's
// rendezvous server is and who this worker is, from the environment kolorun gives it; and,
// once the workers have told each other their hosts, where each rank sits. Built with or
// without Gloo, so that a build without it can say why it cannot join such a job.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rendezvous/client.h"
#include "transport.h"

namespace kolo {

// Where a worker finds its job: the variables kolorun sets for each worker (Horovod's
// names accepted too, docs/elastic.md).
struct GlooJob {
  rendezvous::Endpoint server;  // KOLO_GLOO_RENDEZVOUS_ADDR, _PORT, KOLO_GLOO_SECRET
  std::string host;             // KOLO_HOSTNAME: this worker's host, as kolorun names it
  int slot = 0;                 // KOLO_LOCAL_RANK at launch: this worker's slot on the host
  std::string iface;            // KOLO_GLOO_IFACE: the interface to listen on ("": the one
                                // this host reaches kolorun by)
  bool elastic = false;         // KOLO_ELASTIC=1: failures are the program's to recover from
  // KOLO_ELASTIC_TIMEOUT (seconds): how long an elastic worker waits for its place in a
  // round (kolorun may wait that long for the others and for hosts); 0: the control timeout.
  double place_timeout_seconds = 0;
};
// The variables above without their KOLO_ (or HOROVOD_) prefix: they describe the launch,
// and are no settings (ignored_settings.cc).
inline constexpr std::string_view kGlooJobVariables[] = {"GLOO_RENDEZVOUS_ADDR", "GLOO_RENDEZVOUS_PORT",
                                                         "GLOO_SECRET", "HOSTNAME", "LOCAL_RANK", "GLOO_IFACE",
                                                         "ELASTIC", "ELASTIC_TIMEOUT"};
// nullopt when the environment names no rendezvous server (not a Gloo job); throws
// kolo::Error(InvalidArgument) naming a variable that is missing or wrong.
std::optional<GlooJob> gloo_job_from_environment();

// The round of the Gloo job the running kolo is part of; 0 when kolo runs on MPI or not at
// all (api.cc).
int64_t current_gloo_round();

// Where `rank` sits, from every rank's host: the ranks of one host are a node, in rank
// order; nodes are numbered by their lowest rank; cross ranks share a local rank.
Topology topology_from_hosts(const std::vector<std::string>& host_of_rank, int rank);

}  // namespace kolo
