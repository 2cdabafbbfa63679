// Starts mpirun/srun for the supervisor, or a remote agent (remote_kill.h): in a process
// group of its own, its stdout and stderr on pipes, and bound to kolorun's life.
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

// Shared: the job may read kolorun's stdin (unless it is a terminal). Detached: a session
// of its own with stdin from /dev/null, so no terminal to ask on: an ssh that wants a
// password fails at once instead of prompting on kolorun's terminal.
enum class Terminal { Shared, Detached };

// `argv[0]` is looked up on kolorun's PATH. Throws kolo::Error when it cannot be run.
SpawnedLauncher spawn_launcher(const std::vector<std::string>& argv, const Environment& env,
                               Terminal terminal = Terminal::Shared);

}  // namespace kolo::launcher
