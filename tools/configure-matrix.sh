#!/usr/bin/env bash
# Configures kolo once for each of its CMake switches turned off (the AUTO ones forced on,
# each KOLO_SANITIZE value, and the values that must be refused), each in its own
# temporary build folder, so that a combination nobody builds day to day still
# configures. Per case:
#   1. cmake configure (Ninja), which also generates the build files: a target that another
#      folder names but this combination leaves out fails here;
#   2. `ninja -n`: the whole build graph resolves (every source and dependency exists);
#   3. what the switch promises, e.g. KOLO_BUILD_EXAMPLES=OFF leaves no allreduce_demo target,
#      KOLO_CUDA=OFF reports KOLO_WITH_CUDA OFF.
# Nothing is compiled. One line per case: ok or FAILED, its time; the failed cases' logs
# are printed at the end. Exit status 1 when any case failed.
#
#   tools/configure-matrix.sh            every case, KOLO_TOOL_JOBS (default 2) at a time
#   KOLO_TOOL_JOBS=1 tools/configure-matrix.sh
#
# The switches (CMakeLists.txt, cmake/KoloCuda.cmake, models/CMakeLists.txt):
#   KOLO_BUILD_TESTS, KOLO_BUILD_EXAMPLES, KOLO_BUILD_BENCHMARKS   ON/OFF, default ON
#   KOLO_CUDA, KOLO_ONEDNN, KOLO_TORCH, KOLO_GLOO   AUTO/ON/OFF, default AUTO (ON fails without the library)
#   KOLO_NATIVE                            ON/OFF, default ON
#   KOLO_SANITIZE                          OFF/address/thread, default OFF (tools/sanitize.sh)
#   KOLO_BUILD_FUZZERS                     OFF/ON, default OFF (clang only; tools/fuzz.sh)
# KOLO_WITH_CUDA, KOLO_WITH_NCCL and KOLO_WITH_ONEDNN are what configure decided from those,
# not switches: the cases check them.
set -uo pipefail

KOLO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JOBS="${KOLO_TOOL_JOBS:-2}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/kolo-configure-matrix.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

have_nvcc() { [[ -x /usr/local/cuda/bin/nvcc ]] || command -v nvcc >/dev/null; }
# Where find_package(dnnl) looks on Debian and after a source install.
have_onednn() { compgen -G "/usr/lib/*/cmake/dnnl/dnnl[-C]*onfig.cmake" >/dev/null ||
                compgen -G "/usr/local/lib*/cmake/dnnl/dnnl[-C]*onfig.cmake" >/dev/null; }

# The PyTorch bindings' three packages (cmake/KoloTorch.cmake).
have_torch() { /usr/bin/python3 -c "import torch" 2>/dev/null &&
               compgen -G "/usr/lib/*/cmake/Torch/TorchConfig.cmake" >/dev/null &&
               [[ -f /usr/lib/cmake/pybind11/pybind11Config.cmake ]]; }

# name | cmake arguments | check after a good configure: "no-target NAME", "target NAME",
# "says TEXT" (in the configure output) or "-"; a case whose name ends in "(refused)" must
# fail to configure with the message given as "says TEXT".
CASES=(
  "defaults|-|target kolorun"
  "KOLO_BUILD_TESTS=OFF|-DKOLO_BUILD_TESTS=OFF|no-target kolo_launcher_tests"
  "KOLO_BUILD_EXAMPLES=OFF|-DKOLO_BUILD_EXAMPLES=OFF|no-target allreduce_demo"
  "KOLO_BUILD_BENCHMARKS=OFF|-DKOLO_BUILD_BENCHMARKS=OFF|no-target allreduce_benchmark"
  "KOLO_BUILD_EXAMPLES=OFF KOLO_BUILD_BENCHMARKS=OFF|-DKOLO_BUILD_EXAMPLES=OFF -DKOLO_BUILD_BENCHMARKS=OFF|no-target kolo_example_common"
  "KOLO_BUILD_TESTS=OFF KOLO_BUILD_EXAMPLES=OFF KOLO_BUILD_BENCHMARKS=OFF|-DKOLO_BUILD_TESTS=OFF -DKOLO_BUILD_EXAMPLES=OFF -DKOLO_BUILD_BENCHMARKS=OFF|target kolorun"
  "KOLO_CUDA=OFF|-DKOLO_CUDA=OFF|says GPU code (KOLO_WITH_CUDA): OFF"
  "KOLO_ONEDNN=OFF|-DKOLO_ONEDNN=OFF|says (KOLO_WITH_ONEDNN): OFF"
  "KOLO_NATIVE=OFF|-DKOLO_NATIVE=OFF|-"
  "KOLO_GLOO=OFF|-DKOLO_GLOO=OFF|no-target kolo_gloo_scenarios"
  "KOLO_GLOO=ON|-DKOLO_GLOO=ON|target kolo_gloo_scenarios"
  "KOLO_GLOO=bogus (refused)|-DKOLO_GLOO=bogus|says KOLO_GLOO='bogus': expected AUTO, ON or OFF"
  "KOLO_CUDA=bogus (refused)|-DKOLO_CUDA=bogus|says KOLO_CUDA='bogus': expected AUTO, ON or OFF"
  "KOLO_ONEDNN=bogus (refused)|-DKOLO_ONEDNN=bogus|says KOLO_ONEDNN='bogus': expected AUTO, ON or OFF"
  "KOLO_TORCH=OFF|-DKOLO_TORCH=OFF|no-target kolo_torch_python"
  "KOLO_TORCH=bogus (refused)|-DKOLO_TORCH=bogus|says KOLO_TORCH='bogus': expected AUTO, ON or OFF"
  "KOLO_SANITIZE=address|-DKOLO_SANITIZE=address -DKOLO_CUDA=OFF|says (KOLO_SANITIZE): address"
  "KOLO_SANITIZE=thread|-DKOLO_SANITIZE=thread -DKOLO_CUDA=OFF|says (KOLO_SANITIZE): thread"
  "KOLO_SANITIZE=bogus (refused)|-DKOLO_SANITIZE=bogus|says KOLO_SANITIZE='bogus': expected OFF, address or thread"
  "KOLO_BUILD_FUZZERS=ON with gcc (refused)|-DKOLO_BUILD_FUZZERS=ON -DCMAKE_CXX_COMPILER=g++ -DCMAKE_C_COMPILER=gcc|says KOLO_BUILD_FUZZERS=ON needs clang"
)
if have_nvcc; then
  CASES+=("KOLO_CUDA=ON|-DKOLO_CUDA=ON|says GPU code (KOLO_WITH_CUDA): ON")
else
  CASES+=("KOLO_CUDA=ON (refused)|-DKOLO_CUDA=ON|says KOLO_CUDA=ON but no CUDA toolkit")
fi
if have_onednn; then
  CASES+=("KOLO_ONEDNN=ON|-DKOLO_ONEDNN=ON|says (KOLO_WITH_ONEDNN): ON")
else
  CASES+=("KOLO_ONEDNN=ON (refused)|-DKOLO_ONEDNN=ON|says KOLO_ONEDNN=ON but oneDNN was not found")
fi
if have_torch; then
  CASES+=("KOLO_TORCH=ON|-DKOLO_TORCH=ON|target kolo_torch_python")
else
  CASES+=("KOLO_TORCH=ON (refused)|-DKOLO_TORCH=ON|says KOLO_TORCH=ON but these were not found")
fi

# Runs case number $1; its log goes to $WORK/$1.log, its result line to $WORK/$1.result.
run_case() {
  local index=$1 name args check
  IFS='|' read -r name args check <<<"${CASES[$index]}"
  local dir="$WORK/build-$index" log="$WORK/$index.log" start=$SECONDS status=ok
  local -a cmake_args=()
  [[ "$args" != "-" ]] && read -r -a cmake_args <<<"$args"
  local configured=0
  cmake -S "$KOLO_ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${cmake_args[@]}" >"$log" 2>&1 &&
    configured=1
  if [[ "$name" == *"(refused)" ]]; then
    # A value the build cannot honour must stop configure with the message, not go on.
    ((configured == 0)) && grep -qF -- "${check#says }" "$log" || status=FAILED
  elif ((configured == 0)); then
    status=FAILED
  elif ! ninja -C "$dir" -n >>"$log" 2>&1; then
    echo "ninja -n failed" >>"$log"
    status=FAILED
  else
    # The list goes to a file first: `ninja -t targets | grep -q` would fail under pipefail
    # whenever grep's early exit cuts ninja off (SIGPIPE) on a long list.
    local targets="$WORK/$index.targets"
    ninja -C "$dir" -t targets all >"$targets" 2>>"$log"
    case "$check" in
      "target "*) grep -q "^${check#target }:" "$targets" ||
                    { echo "expected the target ${check#target }" >>"$log"; status=FAILED; } ;;
      "no-target "*) ! grep -q "^${check#no-target }:" "$targets" ||
                       { echo "the target ${check#no-target } should not exist" >>"$log"; status=FAILED; } ;;
      "says "*) grep -qF -- "${check#says }" "$log" ||
                  { echo "configure did not say: ${check#says }" >>"$log"; status=FAILED; } ;;
    esac
  fi
  printf '%-7s %-72s %4d s\n' "$status" "$name" "$((SECONDS - start))" >"$WORK/$index.result"
  rm -rf "$dir"
}

T0=$SECONDS
running=0
for index in "${!CASES[@]}"; do
  if ((running >= JOBS)); then
    wait -n
    running=$((running - 1))
  fi
  run_case "$index" &
  running=$((running + 1))
done
wait

failed=0
for index in "${!CASES[@]}"; do
  cat "$WORK/$index.result"
  if grep -q '^FAILED' "$WORK/$index.result"; then
    failed=$((failed + 1))
    printf -- '---- log of the failed case:\n'
    tail -n 30 "$WORK/$index.log"
    printf -- '----\n'
  fi
done
printf 'configure matrix: %d cases, %d failed, %d s\n' "${#CASES[@]}" "$failed" "$((SECONDS - T0))"
((failed == 0))
