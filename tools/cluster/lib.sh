# shellcheck shell=bash
# What the fake-cluster scripts in tools/cluster/ share (sourced, not run):
#   cluster_log / cluster_die    messages prefixed with the script's name
#   cluster_missing CODE MSG     "cannot run here": prints MSG and exits with CODE (77 by
#                                default), which CTest reads as SKIP (SKIP_RETURN_CODE)
#   cluster_need_root            SKIP unless root (namespaces, daemons, tc need it)
#   cluster_require PKG...       fail naming the Debian packages that are not installed
#   cluster_stop_pid PID         TERM, wait up to 10 s, then KILL - one process we started
#   cluster_free_port_base N     a port P such that P..P+N-1 have no listener
#   cluster_up_args "$@"         parses "[--hosts N] [--slots S] STATE_DIR", the arguments
#                                of every *-up.sh, into HOSTS, SLOTS and STATE
set -euo pipefail

CLUSTER_SCRIPT="$(basename "$0")"
CLUSTER_SKIP="${KOLO_TOOL_CLUSTER_SKIP_CODE:-77}"

cluster_log() { printf '[%s] %s\n' "$CLUSTER_SCRIPT" "$*" >&2; }
cluster_die() { printf '[%s] error: %s\n' "$CLUSTER_SCRIPT" "$*" >&2; exit 1; }
cluster_missing() { printf '[%s] SKIP: %s\n' "$CLUSTER_SCRIPT" "$*" >&2; exit "$CLUSTER_SKIP"; }

cluster_need_root() {
  [[ "$(id -u)" == 0 ]] || cluster_missing "needs root (network namespaces, daemons, tc); running as $(id -un)"
}

# $1... Debian package names that must be installed. A test never installs packages:
# tools/common.sh (the README's set-up) lists them all, so a missing one is a set-up error,
# not something this machine cannot do, and fails instead of skipping.
cluster_require() {
  local missing=() p
  for p in "$@"; do
    [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" == "install ok installed" ]] || missing+=("$p")
  done
  ((${#missing[@]} == 0)) ||
    cluster_die "Debian packages ${missing[*]} are missing: the README's set-up installs them (tools/common.sh), or apt-get install ${missing[*]}"
}

cluster_stop_pid() {
  local pid="$1" i
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.2; done
  kill -KILL "$pid" 2>/dev/null || true
}

# Several clusters may run at once (two build folders' test suites): each takes a block
# of ports nobody listens on. A race with another starter is possible but the daemons then
# fail to bind and the caller sees it.
cluster_free_port_base() {
  local n="$1" base listening
  listening="$(ss -Htln 2>/dev/null | awk '{n = split($4, a, ":"); print a[n]}' | sort -u)"
  for base in $(seq 20000 500 40000); do
    if ! awk -v lo="$base" -v hi="$((base + n - 1))" '$1 >= lo && $1 <= hi { found = 1 } END { exit !found }' \
           <<<"$listening"; then
      echo "$base"; return 0
    fi
  done
  cluster_die "no free block of $n ports between 20000 and 40000"
}

# A host is a SLURM node or a namespace host; its slots are CPUs (SLURM) or MPI slots.
cluster_up_args() {
  local usage="usage: $CLUSTER_SCRIPT [--hosts N] [--slots S] STATE_DIR"
  HOSTS=2 SLOTS=2
  while (($# > 1)); do
    case "$1" in
      --hosts) HOSTS="$2"; shift 2 ;;
      --slots) SLOTS="$2"; shift 2 ;;
      *) cluster_die "unknown option $1 ($usage)" ;;
    esac
  done
  (($# == 1)) || cluster_die "$usage"
  [[ "$HOSTS" =~ ^[1-9][0-9]?$ && "$SLOTS" =~ ^[1-9][0-9]?$ ]] || cluster_die "--hosts and --slots take 1..99"
  STATE="$1"
}
