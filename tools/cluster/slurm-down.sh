#!/usr/bin/env bash
# slurm-down.sh STATE_DIR - stops the cluster that slurm-up.sh started in STATE_DIR (its
# jobs, its slurmd, slurmctld and munged, by the pids they recorded there) and removes
# what it wrote. Safe to run twice, or on a half-started cluster.
source "$(dirname "$0")/lib.sh"
set +e   # tear down as much as possible, whatever fails
(($# == 1)) || cluster_die "usage: slurm-down.sh STATE_DIR"
D="$1"
[[ -d "$D" ]] || exit 0

if [[ -f "$D/slurm.conf" ]] && [[ -f "$D/slurmctld.pid" ]]; then
  export SLURM_CONF="$D/slurm.conf"
  # Only this private cluster's jobs: SLURM_CONF points scancel at our controller.
  timeout 10 scancel --quiet --full --user="$(id -un)" 2>/dev/null
  for _ in $(seq 25); do
    [[ -z "$(timeout 5 squeue -h 2>/dev/null)" ]] && break
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
# Only what slurm-up.sh creates, so a mistyped STATE_DIR cannot wipe anything else.
rm -rf "$D"/{munge,ctld,log,spool,tmp} "$D"/{slurm.conf,cgroup.conf,task_prolog.sh,env.sh,munged.pid,slurmctld.pid}
rm -f "$D"/slurmd.*.pid
rmdir "$D" 2>/dev/null
cluster_log "stopped; $D removed"
exit 0
