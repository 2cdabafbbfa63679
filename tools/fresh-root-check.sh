#!/usr/bin/env bash
# Runs the README's two commands on a minimal Debian 12, the way a new user meets kolo:
# a `mmdebstrap --variant=minbase bookworm` root, a clone of this repository in it, then
#   1. the demo command, as a user with sudo (short: its own flags make it one small epoch);
#   2. the test command, as root, with a CTest filter that picks a few quick tests (its
#      build still covers every target);
#   3. the demo command again, as root.
# A package that tools/common.sh forgets makes one of them fail here, with the configure or
# build error in the output, while this machine (which has more installed) would pass.
#
# Usage: tools/fresh-root-check.sh [--keep]     (--keep: leave the root for a look inside)
# It clones the committed HEAD: commit what you want checked.
#
# Exit status: 0 both commands passed; 1 one failed (or a step here did); 77 this machine
# cannot build such a root at all (not root, no mmdebstrap to be had, no mount namespaces);
# 2 a bad KOLO_TOOL_FRESH_TESTS_AS.
#
# Environment knobs (all optional):
#   KOLO_TOOL_FRESH_ROOT_DIR      the folder in which a new root folder is made (default /var/tmp)
#   KOLO_TOOL_FRESH_DEMO_ARGS     the demo's flags (default: --epochs 1 --train-limit 4096 --test-limit 1024)
#   KOLO_TOOL_FRESH_TEST_FILTER   the CTest filter (default: see QUICK_TESTS below)
#   KOLO_TOOL_FRESH_STEP_TIMEOUT  seconds any one step may take (default 1800)
#   KOLO_TOOL_FRESH_TESTS_AS      who runs the test command: root (default; it shares this
#                            machine's ccache) or kolo (the user with sudo)
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SUITE=bookworm
USER_NAME=kolo
DEMO_ARGS="${KOLO_TOOL_FRESH_DEMO_ARGS:---epochs 1 --train-limit 4096 --test-limit 1024}"
# One of each kind: unit tests of the runtime, collectives on 2 ranks, the launcher, the
# main job's tests, the docs' flag tables (python3), and find_package(kolo) from an
# outside project (which needs every package the installed config looks for).
QUICK_TESTS='^(runtime\.config.*|mpi_np2|launcher\.kolorun.*|examples\.mnist\..*|docs\..*|package\..*)$'
TEST_FILTER="${KOLO_TOOL_FRESH_TEST_FILTER:-$QUICK_TESTS}"
STEP_TIMEOUT="${KOLO_TOOL_FRESH_STEP_TIMEOUT:-1800}"
TESTS_AS="${KOLO_TOOL_FRESH_TESTS_AS:-root}"
[[ "$TESTS_AS" == root || "$TESTS_AS" == "$USER_NAME" ]] ||
  { echo "KOLO_TOOL_FRESH_TESTS_AS='$TESTS_AS': expected root or $USER_NAME" >&2; exit 2; }
KEEP=0
[[ "${1:-}" == --keep ]] && KEEP=1

T0=$SECONDS
log() { printf '[fresh-root %4ds] %s\n' "$((SECONDS - T0))" "$*" >&2; }
failed() {  # failed WHAT STATUS
  local why="exit status $2"
  (($2 == 124 || $2 == 137)) && why="it ran past KOLO_TOOL_FRESH_STEP_TIMEOUT ($STEP_TIMEOUT s)"
  log "FAILED: $1 on a minimal Debian 12 ($why); its output is above"
  exit 1
}
cannot() {
  printf '\n[fresh-root] ********************************************************\n' >&2
  printf '[fresh-root] SKIPPED: this machine cannot run the fresh Debian 12 check: %s\n' "$*" >&2
  printf '[fresh-root] ********************************************************\n\n' >&2
  exit 77
}

# ---- can this machine do it at all? ------------------------------------------------------
((EUID == 0)) || cannot "it needs root (mmdebstrap, chroot and mounts)"
if ! command -v mmdebstrap >/dev/null; then
  log "installing mmdebstrap (the tool that builds the root)"
  { timeout 300 apt-get -o DPkg::Lock::Timeout=120 update -q &&
    DEBIAN_FRONTEND=noninteractive timeout 600 apt-get -o DPkg::Lock::Timeout=120 install -y -q \
      --no-install-recommends mmdebstrap; } >&2 ||
    cannot "mmdebstrap is not installed and apt-get could not install it"
fi
unshare --mount --propagation private true 2>/dev/null ||
  cannot "no mount namespaces here (unshare --mount failed), so the root's mounts could leak"

# The machine's own apt sources, as files: mmdebstrap pastes them into the root.
sources=()
[[ -s /etc/apt/sources.list ]] && grep -q '^[[:space:]]*deb' /etc/apt/sources.list &&
  sources+=(/etc/apt/sources.list)
for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
  [[ -s "$f" ]] && sources+=("$f")
done
((${#sources[@]} > 0)) || cannot "this machine has no apt sources to build the root from"

# ---- the root ----------------------------------------------------------------------------
# Always a folder of its own, made here: it is deleted at the end, with everything in it.
PARENT="${KOLO_TOOL_FRESH_ROOT_DIR:-/var/tmp}"
[[ "$PARENT" != *[[:space:]]* ]] || { log "KOLO_TOOL_FRESH_ROOT_DIR='$PARENT' has a space in it"; exit 2; }
ROOT="$(realpath "$(mktemp -d "$PARENT/kolo-fresh-root.XXXXXX")")"

# Processes still running inside the root (a rank that outlived its job): ours to end.
end_processes_in_root() {
  local pid
  for pid in /proc/[0-9]*; do
    [[ "$(readlink "$pid/root" 2>/dev/null)" == "$ROOT" ]] && kill -KILL "${pid#/proc/}" 2>/dev/null
  done
  return 0
}
cleanup() {
  local status=$?
  end_processes_in_root
  # The mounts live in a private mount namespace that ends with its last process, so the
  # root is plain files here; refuse to delete anything if that ever stops being true.
  # awk reads the whole list: an early exit could make findmnt fail, and the check pass.
  if findmnt -rn -o TARGET | awk -v root="$ROOT/" 'index($0, root) == 1 { found = 1 } END { exit !found }'; then
    log "error: something is still mounted under $ROOT; not removing it"
    exit 1
  elif ((KEEP)); then
    log "kept the root at $ROOT"
  else
    rm -rf --one-file-system "$ROOT"
  fi
  exit "$status"
}
# A step runs in the background and is waited for, so that INT or TERM (Ctrl-C, CI
# cancelling) reaches this script at once; it passes the signal on to the step's timeout,
# which passes it to the step.
STEP_PID=
bounded() {  # bounded COMMAND...: the command within STEP_TIMEOUT
  timeout --kill-after=30 "$STEP_TIMEOUT" "$@" </dev/null &
  STEP_PID=$!
  local status=0
  wait "$STEP_PID" || status=$?
  STEP_PID=
  return "$status"
}
stop() {
  [[ -n "$STEP_PID" ]] && kill -TERM "$STEP_PID" 2>/dev/null && wait "$STEP_PID"
  exit "$1"
}
trap cleanup EXIT
trap 'stop 130' INT
trap 'stop 143' TERM

log "building a minimal Debian 12 root ($SUITE, minbase, plus sudo) in $ROOT from ${sources[*]}"
# --include=sudo: the demo runs as a user with sudo, who has it by definition.
bounded mmdebstrap --variant=minbase --include=sudo \
  "$SUITE" "$ROOT" "${sources[@]}" || failed "building the root (mmdebstrap)" $?
# A chroot is not a booted machine: give it what every machine has, a hosts file (Open MPI
# and sudo look up this host's name) and a name server (apt-get inside the root).
printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\n' \
  "$(hostname)" >"$ROOT/etc/hosts"
[[ -s "$ROOT/etc/resolv.conf" ]] || cp -L /etc/resolv.conf "$ROOT/etc/resolv.conf"
# Packages installed in the root (munge, slurmd) must not start daemons there.
printf '#!/bin/sh\nexit 101\n' >"$ROOT/usr/sbin/policy-rc.d"
chmod 0755 "$ROOT/usr/sbin/policy-rc.d"
chroot "$ROOT" useradd --create-home --shell /bin/bash "$USER_NAME"
echo "$USER_NAME ALL=(ALL) NOPASSWD: ALL" >"$ROOT/etc/sudoers.d/$USER_NAME"
chmod 0440 "$ROOT/etc/sudoers.d/$USER_NAME"

CLONE="/home/$USER_NAME/kolo"
git clone --quiet --no-hardlinks "$REPO" "$ROOT$CLONE"
log "cloned $(git -C "$REPO" rev-parse --short HEAD) to $CLONE"
[[ -z "$(git -C "$REPO" status --porcelain --untracked-files=no)" ]] ||
  log "note: $REPO has uncommitted changes; the root checks HEAD without them"
chroot "$ROOT" chown -R "$USER_NAME:$USER_NAME" "$CLONE"

# Root's test build shares this machine's compiler cache (the same Debian compiler and
# headers give the same objects, so the host's build after this one reuses them). The
# user's demo build starts from an empty cache, as a new user's does.
HOST_CCACHE="$(ccache -k cache_dir 2>/dev/null || echo /root/.cache/ccache)"
mkdir -p "$HOST_CCACHE" "$ROOT/root/.cache/ccache"

# ---- the two README commands, inside the root ---------------------------------------------
# Everything below runs in a private mount namespace: /proc, /sys, /dev and /dev/shm are
# mounted for the root there and vanish with it, however this script ends.
inside_root() {  # inside_root USER HOME COMMAND
  # shellcheck disable=SC2016  # the inner script expands its own arguments
  bounded unshare --mount --propagation private -- bash -euo pipefail -c '
      root=$1 ccache_dir=$2; shift 2
      mount -t proc proc "$root/proc"
      mount --rbind /sys "$root/sys"
      mount --rbind /dev "$root/dev"
      mount --bind /dev/shm "$root/dev/shm"
      mount --bind "$ccache_dir" "$root/root/.cache/ccache"
      exec "$@"' _ "$ROOT" "$HOST_CCACHE" \
    chroot --userspec="$1:$1" "$ROOT" \
    env -i HOME="$2" USER="$1" LOGNAME="$1" SHELL=/bin/bash TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    bash -c "cd $CLONE && $3"
}

# run_step WHO WHAT COMMAND: one README command inside the root, as the user or as root.
run_step() {
  local who=$1 what=$2 command=$3 home=/root step_start=$SECONDS
  [[ "$who" == root ]] || home="/home/$who"
  log "as $who: $command"
  inside_root "$who" "$home" "$command" || failed "$what (as $who)" $?
  log "$what passed as $who ($((SECONDS - step_start)) s)"
}

# The user installs the packages (through sudo) and builds; root's demo then checks that
# the same tree runs for root too (mpirun's root flags), which takes seconds.
run_step "$USER_NAME" "the demo command" "./tools/run-demo.sh $DEMO_ARGS"
printf -v quoted_filter '%q' "$TEST_FILTER"
run_step "$TESTS_AS" "the test command" "./tools/run-tests.sh -R $quoted_filter"
run_step root "the demo command" "./tools/run-demo.sh $DEMO_ARGS"
log "passed: both README commands work on a minimal Debian 12"
