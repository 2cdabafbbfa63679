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
#include "environment.h"
#include "hosts.h"
#include "job_output.h"
#include "options.h"
#include "process_exit.h"
#include "rendezvous/protocol.h"

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

// --network-interface names an interface or subnet this host has an IPv4 address on: the
// one its workers reach kolorun's rendezvous at. Throws kolo::Error (InvalidArgument).
void check_network_interface(const LaunchOptions& options);
// What the static and the elastic launch share:
// - where the workers reach kolorun: KOLO_GLOO_RENDEZVOUS_ADDR from kolorun's environment;
//   else the loopback address when they all run here; else this host's address on
//   --network-interface (a name or a subnet), or its first address that is not loopback;
std::string server_address(const std::vector<GlooWorker>& workers, const LaunchOptions& options,
                           const Environment& env);
// - a worker's variables: the flags', and where and who it is (runtime/gloo_job.h);
std::vector<EnvVar> worker_variables(const GlooWorker& worker, const LaunchOptions& options,
                                     const std::string& address, int port, const rendezvous::Secret& secret);
// - its place as horovodrun --gloo tells it (Horovod's gloo_run.py): HOROVOD_RANK, _SIZE,
//   _LOCAL_RANK, _LOCAL_SIZE, _CROSS_RANK, _CROSS_SIZE and _HOSTNAME, for scripts that read
//   them (before init, to choose a GPU, say, or as Horovod's test suite does). kolo takes its
//   own place from the rendezvous, the same one: ranks in `workers`' order, local ranks by
//   slot, cross ranks among the hosts with a worker in that slot, hosts in the order of
//   their first rank. An elastic worker is told the place it starts in, as Horovod's
//   elastic driver tells it, and keeps the variables across resets (hvd.rank() is the
//   current place). Its local rank is its slot there too, unique among the host's live
//   workers, though a round's slots may have gaps (then it can differ from the runtime's);
std::vector<EnvVar> horovod_place_variables(const GlooWorker& worker, const std::vector<GlooWorker>& workers);
// - its command: inside a Slurm allocation (SLURM_JOB_ID, and not --launcher mpirun) an srun
//   step of one task on its host; else the program here, or the remote agent's command
//   line for another host;
bool starts_workers_with_srun(const LaunchOptions& options, const Environment& env);
std::vector<std::string> worker_argv(const GlooWorker& worker, const LaunchOptions& options,
                                     const std::vector<EnvVar>& variables, const LaunchContext& context);
// - "kolorun: rank 1 (on node1) exited with code 3; its last lines:" and those lines.
std::string describe_worker_failure(int rank, const std::string& host, const ProcessExit& ended, const JobOutput& output);

// Runs the job; returns kolorun's exit status (as main.cc's for mpirun).
int run_gloo_job(const LaunchOptions& options, const std::vector<HostSlots>& hosts, const LaunchContext& context);

}  // namespace kolo::launcher
