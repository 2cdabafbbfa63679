#!/usr/bin/env bash
# Builds the runtime, the collective backends, the launcher, the simulator and their tests with a sanitizer
# (KOLO_SANITIZE, cmake/KoloSanitizers.cmake) and runs those tests. A report fails the run,
# whatever the test itself made of it: every report goes to a file, and the run fails when
# any file is there (a test that expects a rank to die, or matches its output, would
# otherwise let a report pass).
#
#   tools/sanitize.sh               both jobs, one after the other
#   tools/sanitize.sh address       ASan + UBSan: the unit tests and the MPI tests
#   tools/sanitize.sh thread        TSan: the unit tests, the ranks-as-threads runtime tests
#                                   and shutdown() racing calls on other threads
#   tools/sanitize.sh JOB REGEX     only the tests of JOB whose name REGEX (Python) finds
#
# No CUDA and no oneDNN in these builds (nvcc takes no sanitizer flags; the model layer is
# not what they check). Open MPI is not built for TSan: its progress engine writes buffers
# that another thread polls, so tools/sanitizers/tsan.supp suppresses Open MPI's own frames,
# and nothing else.
#   KOLO_TOOL_BUILD_DIR   the jobs build in KOLO_TOOL_BUILD_DIR-address and KOLO_TOOL_BUILD_DIR-thread
#                    (default: <repo>/build-sanitize)
#   KOLO_TOOL_JOBS        parallel build jobs (default: number of cores)
set -euo pipefail
KOLO_ROOT_EARLY="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
jobs=(address thread)
if [[ "${1:-}" == address || "${1:-}" == thread ]]; then
  jobs=("$1")
  shift
elif (($# > 0)); then
  printf '[kolo] error: usage: tools/sanitize.sh [address|thread [NAME_REGEX]] (got %s)\n' "$1" >&2
  exit 2
fi
name_filter="${1:-}"
# Absolute: ctest runs each test in its own folder, where a relative log_path would go.
build_prefix="$(realpath -m "${KOLO_TOOL_BUILD_DIR:-$KOLO_ROOT_EARLY/build-sanitize}")"
unset KOLO_TOOL_BUILD_DIR
KOLO_TOOL_BUILD_TYPE=RelWithDebInfo  # optimised, with line numbers in the reports
# shellcheck source=tools/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
kolo_install_packages
kolo_setup_mpi
supp="$KOLO_ROOT/tools/sanitizers"
reports=""  # the running job's report folder (run_job)

# The test programs of the layers checked here; a test runs when its command starts one.
# The unit tests of the first line never start MPI: LeakSanitizer checks them. Open MPI
# unloads its plugins before LeakSanitizer looks, so what they never free has no module
# name left to suppress: whatever starts MPI runs without it.
NO_MPI_PROGRAMS=(kolo_runtime_unit_tests kolo_inprocess_tests kolo_ops_unit_tests
                 kolo_launcher_tests kolo_sim_unit_tests)
MPI_PROGRAMS=(kolo_shutdown_race kolo_mpi_tests kolo_init_modes kolo_timeline_writer)
# Jobs of workers that kolorun starts over Gloo (no MPI, real processes): the Gloo
# transport, the rendezvous client and server under load. Gloo's own library is not
# instrumented: only kolo's side of it is checked.
GLOO_PROGRAMS=(kolo_gloo_scenarios)

# Prints ctest's -I list "0,0,1,N,M,..." (an empty range, then test numbers: ",,,N" would
# mean every test) of the tests in build folder $1 with a label matching $2 (a Python
# regular expression) whose command runs one of the programs named after it, and whose
# name $name_filter finds. (A -R given to ctest as well would renumber the tests.)
select_tests() {
  local build=$1 labels=$2
  shift 2
  ctest --test-dir "$build" --show-only=json-v1 | /usr/bin/python3 -c '
import json, os, re, sys
labels, names, programs = re.compile(sys.argv[1]), re.compile(sys.argv[2]), set(sys.argv[3:])
numbers = []
for number, test in enumerate(json.load(sys.stdin)["tests"], start=1):
    properties = {p["name"]: p["value"] for p in test.get("properties", [])}
    test_labels = properties.get("LABELS", [])
    if any(labels.fullmatch(label) for label in test_labels) and names.search(test["name"]) and \
       any(os.path.basename(arg) in programs for arg in test.get("command", [])):
        numbers.append(str(number))
print("0,0,1," + ",".join(numbers) if numbers else "")
' "$labels" "$name_filter" "$@"
}

# Runs the tests that select_tests picks ($2: labels, then the programs) with the
# sanitizer options of job $1; their reports go to $reports.
run_tests() {
  local job=$1 labels=$2
  shift 2
  local tests count
  # (Called under ||, where set -e does not act: each failure is checked by hand.)
  tests="$(select_tests "$KOLO_TOOL_BUILD_DIR" "$labels" "$@")" ||
    kolo_die "$job: could not list the tests of $KOLO_TOOL_BUILD_DIR"
  if [[ -z "$tests" ]]; then
    [[ -n "$name_filter" ]] && { kolo_log "$job: no test of $* matches '$name_filter'"; return 0; }
    kolo_die "$job: no test of $* found in $KOLO_TOOL_BUILD_DIR"
  fi
  count="$(tr "," "\n" <<<"${tests#0,0,1,}" | wc -l)"
  local -a env=()
  case "$job" in
    address-leaks | address)
      local leaks=0
      [[ "$job" == address-leaks ]] && leaks=1
      env=(ASAN_OPTIONS="log_path=$reports/asan:detect_leaks=$leaks:abort_on_error=1"
           UBSAN_OPTIONS="log_path=$reports/ubsan:print_stacktrace=1:halt_on_error=1") ;;
    thread)
      env=(TSAN_OPTIONS="log_path=$reports/tsan:suppressions=$supp/tsan.supp"
           "${no_aslr[@]}") ;;
  esac
  kolo_log "$job: $count tests of $* (labels $labels)"
  env "${env[@]}" ctest --test-dir "$KOLO_TOOL_BUILD_DIR" --output-on-failure -I "$tests" \
    -j "$KOLO_TOOL_JOBS" --timeout 600
}

# setarch -R: gcc 12's TSan cannot map its shadow memory under the address randomisation
# of some kernels (vm.mmap_rnd_bits > 28) and stops at start. Some containers forbid it.
no_aslr=(setarch "$(uname -m)" -R)
"${no_aslr[@]}" true 2>/dev/null || {
  kolo_log "setarch -R is not allowed here: TSan runs with address randomisation on"
  no_aslr=()
}

# Runs job $1 (address or thread): builds, runs the tests, then looks for reports.
run_job() {
  local job=$1 start=$SECONDS status=0
  KOLO_TOOL_BUILD_DIR="$build_prefix-$job"
  KOLO_TOOL_CMAKE_ARGS="-DKOLO_SANITIZE=$job -DKOLO_CUDA=OFF -DKOLO_ONEDNN=OFF -DKOLO_TORCH=OFF \
-DKOLO_BUILD_EXAMPLES=OFF -DKOLO_BUILD_BENCHMARKS=OFF"
  kolo_build kolorun "${NO_MPI_PROGRAMS[@]}" "${MPI_PROGRAMS[@]}" "${GLOO_PROGRAMS[@]}"
  reports="$KOLO_TOOL_BUILD_DIR/sanitizer-reports"
  rm -rf "$reports"
  mkdir -p "$reports"
  if [[ "$job" == address ]]; then
    run_tests address-leaks unit "${NO_MPI_PROGRAMS[@]}" || status=$?
    # kolo_launcher_tests' mpi tests run kolorun, which starts MPI programs.
    run_tests address mpi "${NO_MPI_PROGRAMS[@]}" || status=$?
    run_tests address 'unit|mpi' "${MPI_PROGRAMS[@]}" || status=$?
    run_tests address-leaks mpi "${GLOO_PROGRAMS[@]}" || status=$?
  else
    run_tests thread unit "${NO_MPI_PROGRAMS[@]}" "${MPI_PROGRAMS[@]}" || status=$?
    run_tests thread mpi "${GLOO_PROGRAMS[@]}" || status=$?
  fi
  local found
  found="$(find "$reports" -type f | sort)"
  if [[ -n "$found" ]]; then
    kolo_log "$job: $(wc -l <<<"$found") sanitizer report(s):"
    while read -r report; do
      printf -- '---- %s\n' "$report" >&2
      head -60 "$report" >&2
    done <<<"$found"
    status=1
  fi
  local verdict=FAILED
  ((status == 0)) && verdict="passed, no report"
  kolo_log "$job: $verdict ($((SECONDS - start)) s)"
  return "$status"
}

# Both jobs: each in its own process, so that set -e stops a failed build of either
# (under `||` it would not act) and the other job still runs.
if ((${#jobs[@]} > 1)); then
  failed=0
  for job in "${jobs[@]}"; do bash "${BASH_SOURCE[0]}" "$job" || failed=1; done
  exit "$failed"
fi
run_job "${jobs[0]}"
