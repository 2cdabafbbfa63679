// kolorun --gloo: a job without mpirun, as horovodrun --gloo runs one. kolorun serves the
// rendezvous (rendezvous/server.h) and starts every worker itself: on this host as a
// child, on another through the remote agent (ssh, or Open MPI's plm_rsh_agent). Each
// worker learns from its environment where the server is and which host and slot it is
// (runtime/gloo_job.h); the server gives it its rank. kolorun echoes every worker's output
// as "[R]<stdout>:line", and when a worker fails, ends the others by their pids after
// --kill-after-failure and says which worker failed and how.
#pragma once

#include <string>
#include <vector>

#include "command.h"
#include "hosts.h"
#include "options.h"

namespace kolo::launcher {

struct GlooWorker {
  int rank = 0;
  std::string host;
  int slot = 0;  // its index among its host's workers
  bool operator==(const GlooWorker&) const = default;
};

// Ranks in host order, each host's slots filled before the next host's ("localhost" with
// -np slots when no hosts are given). Throws kolo::Error(InvalidArgument) when the hosts
// have fewer slots than -np.
std::vector<GlooWorker> plan_gloo_workers(int num_ranks, const std::vector<HostSlots>& hosts);

// Whether `host` names this machine (localhost, a loopback address, this host's name): its
// workers start as kolorun's children, the others through the remote agent.
bool is_this_host(const std::string& host);

// Runs the job; returns kolorun's exit status (as main.cc's for mpirun).
int run_gloo_job(const LaunchOptions& options, const std::vector<HostSlots>& hosts, const LaunchContext& context);

}  // namespace kolo::launcher
