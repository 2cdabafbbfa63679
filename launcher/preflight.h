// Checks that catch a launch that cannot work before anything starts, each throwing
// kolo::Error with a message that names the problem: a program that is not there, a
// host that does not resolve, more ranks than slots, no mpirun/srun.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "command.h"
#include "environment.h"
#include "hosts.h"

namespace kolo::launcher {

// The file exec would run for `program` (PATH searched when it has no '/'), or "".
std::string find_executable(const std::string& program, const Environment& env);

void check_program(const std::string& program, const Environment& env);
void check_launcher_program(const LaunchCommand& command, const Environment& env);
// -np against the slots: at least 1, at most the slots of -H or --hostfile (without
// hosts, under mpirun: context.local_cores, as mpirun counts this machine's slots). With
// --oversubscribe (or OMPI_MCA_rmaps_base_oversubscribe=1 in the environment, which mpirun
// obeys as well) up to kMaxRanksPerSlot times the slots. Where kolorun cannot know the
// slots (srun's allocation, a hostfile line without slots=) the launcher checks them, and
// kolorun only refuses more than kMaxRanks, which no machine runs (kolorun keeps a little
// state per rank). Throws kolo::Error (InvalidArgument) naming the allowed range and where
// it comes from.
inline constexpr int kMaxRanksPerSlot = 64;
inline constexpr int kMaxRanks = 1 << 20;
void check_rank_count(const LaunchOptions& options, const std::vector<HostSlots>& hosts,
                      const LaunchContext& context);
// The hosts against the launcher that will start the ranks: none under srun (the
// allocation decides); a Gloo job inside an allocation names them (each worker is an srun
// step on its node); a fixed Gloo job's hosts have a slot for every rank, and its
// --network-interface is one this host has. Throws
// kolo::Error (InvalidArgument), a bad command line, before anything starts.
void check_hosts_for_launcher(const LaunchOptions& options, const std::vector<HostSlots>& hosts,
                              const LaunchContext& context);
// getaddrinfo for every host, all within `bound` (after which kolorun goes on, warning).
// A host that does not resolve fails the launch, or only warns (one line per host) where
// the command is for another machine (--dry-run).
enum class UnresolvedHost { Fail, Warn };
void check_hosts_resolve(const std::vector<HostSlots>& hosts, std::chrono::milliseconds bound,
                         UnresolvedHost unresolved_host);

// Facts about this machine that shape the command.
int local_cores();          // physical cores kolorun may run on: mpirun's default slots
bool running_as_root();
std::string this_program_path();

}  // namespace kolo::launcher
