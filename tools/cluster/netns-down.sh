#!/usr/bin/env bash
# netns-down.sh STATE_DIR - removes the fake hosts netns-up.sh made for STATE_DIR: stops
# the processes still running inside those namespaces (left by a failed test: they can
# only be ours), deletes the namespaces (their veths and bridge go with them) and the
# files. Safe to run twice.
source "$(dirname "$0")/lib.sh"
set +e
(($# == 1)) || cluster_die "usage: netns-down.sh STATE_DIR"
D="$(realpath -m "$1")"
tag="k$(printf '%s' "$D" | md5sum | cut -c1-6)"

namespaces="$(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${tag}-(node[0-9]+|hub)$")"
for ns in $namespaces; do
  for pid in $(ip netns pids "$ns" 2>/dev/null); do cluster_stop_pid "$pid" & done
  wait
  ip netns del "$ns"
done
rm -f "$D"/{env.sh,hostfile,on,rsh,launch,mpirun}
rmdir "$D" 2>/dev/null
# Open MPI session folders are named after the host names our mpirun saw (node0...) and
# its pid; those whose mpirun is gone are litter from a killed run.
for dir in "${TMPDIR:-/tmp}"/ompi.node[0-9]*."$(id -u)"; do
  [[ -d "$dir" ]] || continue
  for jobdir in "$dir"/pid.*; do
    [[ -d "$jobdir" ]] && ! kill -0 "${jobdir##*/pid.}" 2>/dev/null && rm -rf "$jobdir"
  done
  rmdir "$dir" 2>/dev/null
done
[[ -n "$namespaces" ]] && cluster_log "removed $(wc -w <<<"$namespaces") namespaces (${tag}-*)"
exit 0
