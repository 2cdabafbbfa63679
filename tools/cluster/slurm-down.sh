#!/usr/bin/env bash
# slurm-down.sh STATE_DIR - stops the cluster that slurm-up.sh started in STATE_DIR (its
# jobs, its slurmd, slurmctld and munged, by the pids they recorded there) and removes
# what it wrote. Safe to run twice, or on a half-started cluster.
source "$(dirname "$0")/lib.sh"
set +e   # tear down as much as possible, whatever fails
(($# == 1)) || cluster_die "usage: slurm-down.sh STATE_DIR"
D="$1"
[[ -d "$D" ]] || exit 0
# A cluster on namespace hosts (slurm-up.sh --netns): the clients run in its hub.
hub=""
[[ -f "$D/netns" ]] && hub="$(sed -n 's/^KOLO_SLURM_HUB=//p' "$D/netns")"
in_hub() { if [[ -n "$hub" && -e "/run/netns/$hub" ]]; then ip netns exec "$hub" "$@"; else "$@"; fi; }

if [[ -f "$D/slurm.conf" ]] && [[ -f "$D/slurmctld.pid" ]]; then
  export SLURM_CONF="$D/slurm.conf"
  # Only this private cluster's jobs: SLURM_CONF points scancel at our controller.
  in_hub timeout 10 scancel --quiet --full --user="$(id -un)" 2>/dev/null
  for _ in $(seq 25); do
    [[ -z "$(in_hub timeout 5 squeue -h 2>/dev/null)" ]] && break
    sleep 0.2
  done
fi
# Each daemon takes 1.5-2 s to stop: stop them side by side, munged (which they use to
# authenticate) last.
for pidfile in "$D"/slurmd.*.pid "$D/slurmctld.pid"; do
  [[ -f "$pidfile" ]] && cluster_stop_pid "$(cat "$pidfile")" &
done
wait
[[ -f "$D/munged.pid" ]] && cluster_stop_pid "$(cat "$D/munged.pid")"
# The management network (deleting a veth's end in the hub deletes its mgmt0 too).
if [[ -n "$hub" && -e "/run/netns/$hub" ]]; then
  for link in $(ip -n "$hub" -o link show 2>/dev/null | awk -F': ' '{sub(/@.*/, "", $2); print $2}' | grep -E '^(m[0-9]+|mgmt)$'); do
    ip -n "$hub" link del "$link"
  done
fi
# Only what slurm-up.sh creates, so a mistyped STATE_DIR cannot wipe anything else.
rm -rf "$D"/{munge,ctld,log,spool,tmp} "$D"/{slurm.conf,cgroup.conf,task_prolog.sh,env.sh,munged.pid,slurmctld.pid,netns,launch,ctl}
rm -f "$D"/slurmd.*.pid
rmdir "$D" 2>/dev/null
cluster_log "stopped; $D removed"
exit 0
