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
// `source` is "-H" or "--hostfile": where the slots came from.
void check_slots(int num_ranks, const std::vector<HostSlots>& hosts, const std::string& source);
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
