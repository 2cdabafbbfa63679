// Whether stdout is a person's terminal, for the progress bar.
#pragma once

namespace kolo::examples {

// isatty(stdout), corrected for MPI launchers: Open MPI's mpirun gives every rank a
// pseudo-terminal for stdout even when mpirun's own output goes to a file or a pipe, so a
// rank started by a launcher on this machine asks whether the launcher's stdout
// (/proc/<parent>/fd/1) is a terminal. A rank whose parent cannot be inspected (a remote
// daemon) says no.
bool stdout_is_terminal();

}  // namespace kolo::examples
