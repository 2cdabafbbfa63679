#!/usr/bin/env bash
# Builds kolo's libFuzzer harnesses (tests/fuzz/, KOLO_BUILD_FUZZERS: clang, AddressSanitizer
# and UndefinedBehaviorSanitizer, no CUDA) and runs each for SECONDS (default 30) on a copy
# of its seed corpus, tests/fuzz/corpus/<harness>/ (the committed corpus is not grown).
#
#   tools/fuzz.sh [SECONDS] [HARNESS...]     e.g. tools/fuzz.sh 60, tools/fuzz.sh 10 idx_fuzzer
#   tools/fuzz.sh --seeds                    rewrites tests/fuzz/corpus with kolo_fuzz_seeds
#
# Prints per harness its runs, corpus size and crashes, and one machine-readable line
#   KOLO_FUZZ {"harness":"idx_fuzzer","status":"ok","seconds":60,"runs":123,"corpus_inputs":45,...}
# (also collected in $KOLO_TOOL_BUILD_DIR/fuzz-summary.jsonl). Exits non-zero when any harness
# crashed, leaked, ran out of memory, timed out on an input or did not run. A crash's
# input and the full log stay under $KOLO_TOOL_BUILD_DIR/fuzz-runs/<harness>/.
#   KOLO_TOOL_BUILD_DIR   the fuzz build folder (default: <repo>/build-fuzz)
#   KOLO_TOOL_JOBS        parallel build jobs, and harnesses fuzzed at once (default: number of cores)
set -euo pipefail
KOLO_TOOL_BUILD_DIR="${KOLO_TOOL_BUILD_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build-fuzz}"
KOLO_TOOL_BUILD_TYPE=RelWithDebInfo  # optimised, with line numbers in the sanitizers' reports
# shellcheck source=tools/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

seconds=30
write_seeds=0
if [[ "${1:-}" == "--seeds" ]]; then
  write_seeds=1
  shift
elif [[ "${1:-}" =~ ^[0-9]+$ ]]; then
  seconds=$1
  shift
elif [[ -n "${1:-}" && "${1:-}" != *_fuzzer ]]; then
  kolo_die "usage: tools/fuzz.sh [SECONDS] [HARNESS...] | --seeds (got '$1')"
fi

# ---- what the build needs -------------------------------------------------------------------
# clang's libFuzzer and sanitizer runtimes (Debian 12's clang is clang 14).
KOLO_PACKAGES+=(clang libclang-rt-14-dev)
kolo_install_packages
if ! command -v clang++ >/dev/null || ! command -v clang >/dev/null; then
  kolo_die "clang and clang++ not found: the harnesses need clang's libFuzzer (Debian 12: apt-get install clang libclang-rt-14-dev)"
fi
probe_dir="$(mktemp -d)"
trap 'rm -rf "$probe_dir"' EXIT
printf 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n' \
  >"$probe_dir/probe.cc"
if ! clang++ -fsanitize=fuzzer,address,undefined "$probe_dir/probe.cc" -o "$probe_dir/probe" 2>"$probe_dir/err"; then
  clang_version="$(clang++ -dumpversion | cut -d. -f1)"
  kolo_die "clang++ $(clang++ -dumpversion) cannot link a libFuzzer program: its runtime (libclang_rt.fuzzer-x86_64.a) or the sanitizers' are missing (Debian 12: apt-get install libclang-rt-${clang_version}-dev). clang said: $(head -3 "$probe_dir/err")"
fi

KOLO_TOOL_CMAKE_ARGS="-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DKOLO_BUILD_FUZZERS=ON -DKOLO_CUDA=OFF \
-DKOLO_ONEDNN=OFF -DKOLO_TORCH=OFF -DKOLO_BUILD_TESTS=OFF -DKOLO_BUILD_EXAMPLES=OFF -DKOLO_BUILD_BENCHMARKS=OFF ${KOLO_TOOL_CMAKE_ARGS:-}"

if ((write_seeds)); then
  kolo_build kolo_fuzz_seeds
  "$KOLO_TOOL_BUILD_DIR/tests/fuzz/kolo_fuzz_seeds" "$KOLO_ROOT/tests/fuzz/corpus"
  kolo_log "seeds written to tests/fuzz/corpus ($(du -sh "$KOLO_ROOT/tests/fuzz/corpus" | cut -f1))"
  exit 0
fi
kolo_build kolo_fuzzers

# ---- run them -------------------------------------------------------------------------------
harnesses=("$@")
if ((${#harnesses[@]} == 0)); then
  for dir in "$KOLO_ROOT"/tests/fuzz/corpus/*/; do harnesses+=("$(basename "$dir")"); done
fi
summary="$KOLO_TOOL_BUILD_DIR/fuzz-summary.jsonl"
: >"$summary"
failed=()
# Any undefined behaviour or leak stops the run with a report; libFuzzer keeps the input.
# A smaller quarantine of freed memory than ASan's 256 MB keeps a harness's RSS well
# under -rss_limit_mb, so that the limit speaks of kolo's allocations.
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export ASAN_OPTIONS="detect_leaks=1:quarantine_size_mb=64${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
# One harness: its run, then its summary line in $work/summary and its verdict in
# $work/kind. Harnesses run KOLO_TOOL_JOBS at a time (each is one process on one core).
fuzz_one() {
  local harness=$1 binary="$KOLO_TOOL_BUILD_DIR/tests/fuzz/$1" seeds="$KOLO_ROOT/tests/fuzz/corpus/$1"
  local work="$KOLO_TOOL_BUILD_DIR/fuzz-runs/$1" status=0
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/artifacts"
  cp "$seeds"/* "$work/corpus/"
  # -close_fd_mask=1: the harness's own stdout (kolorun --help) out of the log.
  # libFuzzer stops itself after -max_total_time, and an input that runs past -timeout is a
  # finding; `timeout` bounds the rest (a harness stuck where libFuzzer's alarm cannot end
  # it), and such a run fails as "hung".
  timeout --kill-after=10 "$((seconds + 60))" \
    "$binary" -max_total_time="$seconds" -rss_limit_mb=512 -malloc_limit_mb=256 -timeout=10 \
    -close_fd_mask=1 -print_final_stats=1 -artifact_prefix="$work/artifacts/" "$work/corpus" \
    >"$work/log" 2>&1 || status=$?
  local runs rss inputs bytes crashes kind=ok
  runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -1)"
  rss="$(sed -n 's/^stat::peak_rss_mb: *//p' "$work/log" | tail -1)"
  inputs="$(find "$work/corpus" -type f | wc -l)"
  bytes="$(find "$work/corpus" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')"
  crashes="$(find "$work/artifacts" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'oom-*' -o -name 'timeout-*' \) | wc -l)"
  if ((crashes > 0)); then
    kind="$(find "$work/artifacts" -type f | head -1 | xargs basename | cut -d- -f1)"
  elif ((status == 124 || status == 137)); then
    kind=hung
  elif ((status != 0)); then
    kind=error
  fi
  printf '%-24s %10s runs  corpus %5d inputs (%d bytes)  %d crashes  %s\n' \
    "$harness" "${runs:-?}" "$inputs" "$bytes" "$crashes" "$kind" >"$work/summary"
  printf '{"harness":"%s","status":"%s","seconds":%d,"runs":%s,"corpus_inputs":%d,"corpus_bytes":%d,"crashes":%d,"peak_rss_mb":%s,"exit_code":%d}\n' \
    "$harness" "$kind" "$seconds" "${runs:-null}" "$inputs" "$bytes" "$crashes" "${rss:-null}" "$status" >>"$work/summary.json"
  echo "$kind" >"$work/kind"
}

for harness in "${harnesses[@]}"; do
  binary="$KOLO_TOOL_BUILD_DIR/tests/fuzz/$harness"
  seeds="$KOLO_ROOT/tests/fuzz/corpus/$harness"
  [[ -x "$binary" && -d "$seeds" ]] || kolo_die "no harness '$harness' (built: $binary; seeds: $seeds)"
done
kolo_log "fuzzing ${#harnesses[@]} harnesses for $seconds s each, $KOLO_TOOL_JOBS at a time"
running=0
for harness in "${harnesses[@]}"; do
  if ((running >= KOLO_TOOL_JOBS)); then
    wait -n || true
    running=$((running - 1))
  fi
  fuzz_one "$harness" &
  running=$((running + 1))
done
wait || true
for harness in "${harnesses[@]}"; do
  work="$KOLO_TOOL_BUILD_DIR/fuzz-runs/$harness"
  cat "$work/summary"
  echo "KOLO_FUZZ $(cat "$work/summary.json")"
  cat "$work/summary.json" >>"$summary"
  kind="$(cat "$work/kind" 2>/dev/null || echo error)"
  if [[ "$kind" != ok ]]; then
    failed+=("$harness")
    kolo_log "$harness: $kind; input and log in $work (the report follows)"
    grep -E -A25 '^==[0-9]+==ERROR|runtime error:|property does not hold|^==[0-9]+== ERROR' "$work/log" | head -40 >&2 || true
  fi
done
if ((${#failed[@]} > 0)); then
  kolo_die "${#failed[@]} of ${#harnesses[@]} harnesses failed: ${failed[*]} (summary: $summary)"
fi
kolo_log "all ${#harnesses[@]} harnesses ran $seconds s each without a crash ($(kolo_elapsed); summary: $summary)"
