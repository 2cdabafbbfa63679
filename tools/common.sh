# shellcheck shell=bash
# Shared set-up for tools/run-demo.sh and tools/run-tests.sh (sourced, not run):
#   kolo_install_packages   installs the Debian packages kolo needs, only the missing ones
#   kolo_build [target...]  configures (CMake >= 3.25, Ninja, Release) and builds the
#                           targets (default: everything)
#   kolo_setup_mpi          flags (and environment) for mpirun as root / on few cores
#   kolo_mpirun ...         mpirun with those flags
#   kolo_prepare [target...]  all of the above, in order
#
# Environment knobs (all optional):
#   KOLO_TOOL_BUILD_DIR     build folder (default: <repo>/build)
#   KOLO_TOOL_BUILD_TYPE    CMake build type (default: Release)
#   KOLO_TOOL_CMAKE_ARGS    extra arguments for the configure step, e.g. "-DKOLO_CUDA=OFF"
#   KOLO_TOOL_JOBS          parallel build jobs (default: number of cores)
#   KOLO_TOOL_SKIP_PACKAGES=1   do not check or install Debian packages

KOLO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KOLO_TOOL_BUILD_DIR="${KOLO_TOOL_BUILD_DIR:-$KOLO_ROOT/build}"
KOLO_TOOL_BUILD_TYPE="${KOLO_TOOL_BUILD_TYPE:-Release}"
KOLO_TOOL_JOBS="${KOLO_TOOL_JOBS:-$(nproc 2>/dev/null || echo 2)}"

# Everything the build, the tests and the examples use, named directly: apt-get runs with
# --no-install-recommends, so nothing may arrive only as a recommendation. zlib and the
# Fashion-MNIST data set are for the training example (gzip IDX files under /usr/share/...).
# ocl-icd-opencl-dev: Debian's oneDNN package config requires OpenCL's headers and library
# (find_package(OpenCL REQUIRED)) although kolo runs oneDNN on the CPU only.
KOLO_PACKAGES=(
  build-essential cmake ninja-build ccache python3
  openmpi-bin libopenmpi-dev
  libeigen3-dev libdnnl-dev ocl-icd-opencl-dev catch2 nlohmann-json3-dev libcli11-dev zlib1g-dev libgloo-dev
  dataset-fashion-mnist
  # The scaling plots; the single-machine SLURM cluster and the network-namespace hosts
  # (ip, tc) that tests/cluster starts.
  python3-matplotlib slurmctld slurmd slurm-client munge slurm-wlm-basic-plugins libpmix-dev
  iproute2
  # The PyTorch bindings (kolo/torch.h, the kolo.torch package) and their tests and examples
  # (cmake/KoloTorch.cmake, docs/torch.md). python3-dev: pybind11's headers include Python's.
  python3-torch libtorch-dev pybind11-dev python3-dev python3-pytest python3-torchvision
)

kolo_log() { printf '[kolo] %s\n' "$*" >&2; }
kolo_die() { printf '[kolo] error: %s\n' "$*" >&2; exit 1; }

# Seconds since the script started, for the phase timings it prints.
kolo_elapsed() { echo "$((SECONDS - KOLO_T0))s"; }
KOLO_T0=$SECONDS

kolo_install_packages() {
  [[ "${KOLO_TOOL_SKIP_PACKAGES:-0}" == 1 ]] && return 0
  command -v dpkg-query >/dev/null ||
    kolo_die "dpkg-query not found: the set-up targets Debian 12; install the packages by hand: ${KOLO_PACKAGES[*]}"
  local missing=() p
  for p in "${KOLO_PACKAGES[@]}"; do
    [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" == "install ok installed" ]] ||
      missing+=("$p")
  done
  if ((${#missing[@]} == 0)); then
    kolo_log "Debian packages: all ${#KOLO_PACKAGES[@]} present"
    return 0
  fi
  local sudo=()
  if ((EUID != 0)); then
    command -v sudo >/dev/null || kolo_die "missing packages (${missing[*]}) and not root: run as root or install them"
    sudo=(sudo)
  fi
  kolo_log "installing missing Debian packages: ${missing[*]}"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
  kolo_log "packages installed ($(kolo_elapsed))"
}

kolo_build() {
  command -v cmake >/dev/null || kolo_die "cmake not found"
  local version
  version="$(cmake --version | sed -n '1s/[^0-9]*\([0-9][0-9.]*\).*/\1/p')"
  if ! printf '3.25\n%s\n' "$version" | sort -V -C; then
    kolo_die "CMake >= 3.25 needed, found $version"
  fi
  local cache="$KOLO_TOOL_BUILD_DIR/CMakeCache.txt" generator=()
  if [[ -f "$cache" ]]; then
    grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$cache" ||
      kolo_die "$KOLO_TOOL_BUILD_DIR was configured with another generator; remove it or set KOLO_TOOL_BUILD_DIR"
  else
    generator=(-G Ninja)
  fi
  # Relative paths in ccache's keys: clones in other folders share the cache.
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$KOLO_ROOT}"
  local extra=()
  # shellcheck disable=SC2206  # word splitting of the user's extra arguments is intended
  [[ -n "${KOLO_TOOL_CMAKE_ARGS:-}" ]] && extra=(${KOLO_TOOL_CMAKE_ARGS})
  # Every test has a limit of its own (ctest --timeout would change none): this sets the
  # one most of them take, tests/CMakeLists.txt's KOLO_TOOL_TEST_TIMEOUT.
  [[ -n "${KOLO_TOOL_TEST_TIMEOUT:-}" ]] && extra+=("-DKOLO_TOOL_TEST_TIMEOUT=$KOLO_TOOL_TEST_TIMEOUT")
  kolo_log "configuring $KOLO_TOOL_BUILD_DIR ($KOLO_TOOL_BUILD_TYPE, Ninja)"
  cmake -S "$KOLO_ROOT" -B "$KOLO_TOOL_BUILD_DIR" "${generator[@]}" \
    -DCMAKE_BUILD_TYPE="$KOLO_TOOL_BUILD_TYPE" "${extra[@]}"
  local targets=()
  (($# > 0)) && targets=(--target "$@")
  kolo_log "building ${*:-everything} with $KOLO_TOOL_JOBS jobs"
  cmake --build "$KOLO_TOOL_BUILD_DIR" -j "$KOLO_TOOL_JOBS" "${targets[@]}"
  kolo_log "built ($(kolo_elapsed))"
}

# Open MPI refuses to run as root and to place more ranks than cores unless told to. The
# environment variables make that hold for every mpirun the tests start, too.
KOLO_MPIRUN_FLAGS=()
kolo_setup_mpi() {
  command -v mpirun >/dev/null || kolo_die "mpirun not found (package openmpi-bin)"
  KOLO_MPIRUN_FLAGS=()
  if [[ "$(mpirun --version 2>&1 || true)" =~ (Open MPI|OpenRTE) ]]; then
    export OMPI_MCA_rmaps_base_oversubscribe="${OMPI_MCA_rmaps_base_oversubscribe:-1}"
    KOLO_MPIRUN_FLAGS+=(--oversubscribe)
    if ((EUID == 0)); then
      export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
      KOLO_MPIRUN_FLAGS+=(--allow-run-as-root)
    fi
  fi
}

kolo_mpirun() { mpirun "${KOLO_MPIRUN_FLAGS[@]}" "$@"; }

# What both commands do first: packages, MPI settings, configure and build.
kolo_prepare() {
  kolo_install_packages
  kolo_setup_mpi
  kolo_build "$@"
}
