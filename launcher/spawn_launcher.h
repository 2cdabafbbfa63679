// Starts mpirun/srun for the supervisor: in a process group of its own, its stdout and
// stderr on pipes, and bound to kolorun's life.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "environment.h"

namespace kolo::launcher {

struct SpawnedLauncher {
  pid_t pid = -1;  // also its process group id
  int out_fd = -1;
  int err_fd = -1;
};

// `argv[0]` is looked up on kolorun's PATH. Throws kolo::Error when it cannot be run.
SpawnedLauncher spawn_launcher(const std::vector<std::string>& argv, const Environment& env);

}  // namespace kolo::launcher
