#!/bin/bash
# A stand-in for mpirun (through KOLO_MPIRUN) that does not end a failed job, to test
# kolorun --kill-after-failure. It starts the ranks as `mpirun --tag-output` shows their
# output, each in a session of its own (Open MPI's ranks are outside mpirun's process
# group too), then ignores SIGTERM and waits forever, like an mpirun whose abort is stuck
# on a cut-off host. With STUCK_MPIRUN_EXIT=CODE it exits CODE as soon as one rank has
# exited instead, leaving the other ranks running.
# With STUCK_MPIRUN_REMOTE_RANK=R, rank R runs as if on a host cut off from mpirun: its
# start report names host kolo-test-remote, and its parent is a stand-in daemon (bash) in
# a session of its own, which killing mpirun does not end; an exiting stand-in then says,
# as mpirun does, that it lost that host's daemon.
# Its arguments are kolorun's for mpirun: "-np N" among them, the rank command at the end.
args=("$@") np=0 rank_command=()
for ((i = 0; i < ${#args[@]}; i++)); do
  [[ ${args[i]} == -np ]] && np=${args[i + 1]}
  [[ ${args[i]} == --rank-exec ]] && { rank_command=("${args[@]:i-1}"); break; }
done
remote=${STUCK_MPIRUN_REMOTE_RANK:--1}
ranks=()
for ((r = 0; r < np; r++)); do
  if ((r == remote)); then
    OMPI_COMM_WORLD_RANK=$r setsid bash -c '"$@" & wait' daemon "${rank_command[@]}" \
      > >(sed -u "s/^/[1,$r]<stdout>:/") \
      2> >(sed -u "s/^kolorun-rank-started host=[^ ]*/kolorun-rank-started host=kolo-test-remote/; s/^/[1,$r]<stderr>:/" >&2) &
  else
    OMPI_COMM_WORLD_RANK=$r setsid "${rank_command[@]}" > >(sed -u "s/^/[1,$r]<stdout>:/") \
      2> >(sed -u "s/^/[1,$r]<stderr>:/" >&2) &
    ranks+=($!)
  fi
done
trap '' TERM
if [[ -n ${STUCK_MPIRUN_EXIT:-} ]]; then
  wait -n "${ranks[@]}"
  if ((remote >= 0)); then
    echo "ORTE has lost communication with a remote daemon." >&2
    echo "  Remote daemon: [[4242,0],1] on node kolo-test-remote" >&2
  fi
  exit "$STUCK_MPIRUN_EXIT"
fi
while :; do sleep 1; done
