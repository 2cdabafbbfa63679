#include "common/terminal.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace kolo::examples {
namespace {

bool launched_by_mpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "MPI_LOCALRANKID"}) {
    if (std::getenv(var) != nullptr) return true;
  }
  return false;
}

bool is_terminal_path(const std::string& path) {
  return path.rfind("/dev/pts/", 0) == 0 || path.rfind("/dev/tty", 0) == 0 || path == "/dev/console";
}

}  // namespace

bool stdout_is_terminal() {
  if (isatty(STDOUT_FILENO) == 0) return false;
  if (!launched_by_mpi()) return true;
  std::error_code error;
  const auto target = std::filesystem::read_symlink("/proc/" + std::to_string(getppid()) + "/fd/1", error);
  return !error && is_terminal_path(target.string());
}

}  // namespace kolo::examples
