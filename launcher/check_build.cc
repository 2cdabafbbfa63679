#include "check_build.h"

#include <sstream>

#include "kolo/kolo.h"
#include "kolo_launcher_build_info.h"
#include "preflight.h"

namespace kolo::launcher {
namespace {

std::string mark(bool present) { return present ? "[X]" : "[ ]"; }

std::string where(const std::string& program, const Environment& env) {
  const std::string path = find_executable(program, env);
  return path.empty() ? "not found on PATH" : path;
}

// "    [X] name version", then `loaded` (what runs now) on a line of its own; or
// "    [ ] name (why_missing)".
std::string gpu_line(const std::string& name, bool present, const std::string& version,
                     const std::string& loaded, const char* why_missing) {
  std::string line = "    " + mark(present) + " " + name;
  if (!present) return line + " (" + why_missing + ")\n";
  line += (version.empty() ? "" : " " + version) + "\n";
  return loaded.empty() ? line : line + "        " + loaded + "\n";
}

}  // namespace

std::string describe_build(const Environment& env) {
  namespace b = build_info;
  // What the library can do and runs with comes from the library itself; the generated
  // header adds only how this build was configured (and cuDNN, which is kolo_models').
  const BuildInfo info = kolo::build_info();
  std::ostringstream out;
  out << "kolo v" << info.version << " (" << b::kBuildType << ", " << b::kCompiler
      << ", install prefix " << b::kInstallPrefix << ")\n\n";

  out << "MPI:\n"
      << "    [X] " << info.mpi_library << "\n"
      << "        MPI standard " << info.mpi_standard << "\n"
      << "        mpirun: " << where(find_variable(env, "KOLO_MPIRUN").value_or("mpirun"), env)
      << "\n"
      << "        srun: " << where("srun", env) << "\n\n";

  const std::string cuda_loaded = "runtime " + info.cuda_runtime + ", driver " + info.cuda_driver +
                                  ", " + std::to_string(info.cuda_devices) + " device(s)";
  const char* no_cuda = info.cuda ? "not found at configure time"
                                  : "not searched: this build has no CUDA";
  out << "GPU (KOLO_CUDA=" << b::kCudaRequest << ", KOLO_WITH_CUDA="
      << (info.cuda ? "ON" : "OFF") << "):\n"
      << gpu_line("CUDA", info.cuda, info.cuda_compiled, cuda_loaded,
                  "not built: no CUDA toolkit at configure time, or KOLO_CUDA=OFF")
      << gpu_line("NCCL", info.nccl, info.nccl_compiled, "runtime " + info.nccl_runtime, no_cuda)
      << gpu_line("cuDNN", b::kCudnnFound, b::kCudnnVersion, "", no_cuda) << "\n";

  out << "Controllers:\n    [X] MPI\n"
      << "    " << mark(info.gloo) << " Gloo (KOLO_WITH_GLOO: kolorun --gloo, elastic jobs)\n"
      << "Collective backends:\n    [X] MPI\n"
      << "    " << mark(info.nccl) << " NCCL (KOLO_WITH_NCCL)\n"
      << "    " << mark(info.gloo) << " Gloo (CPU tensors)\n";
  return out.str();
}

}  // namespace kolo::launcher
