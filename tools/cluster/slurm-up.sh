#!/usr/bin/env bash
# slurm-up.sh - a throw-away SLURM cluster on this one machine: munged, slurmctld and one
# slurmd per logical node (node0, node1, ...), as root, without systemd and without
# touching /etc. Everything (configs, keys, sockets, logs, pid files) lives in STATE_DIR.
#
#   tools/cluster/slurm-up.sh [--netns NETNS_DIR] [--hosts 2] [--slots 2] STATE_DIR
#                                    # --netns first, if given; nodes, CPUs per node
#   source STATE_DIR/env.sh          # SLURM_CONF for srun, sbatch, sinfo, scontrol
#   srun --mpi=pmix -N 2 -n 4 build/examples/allreduce_demo
#   tools/cluster/slurm-down.sh STATE_DIR
#
# With --netns NETNS_DIR (the state folder of a running tools/cluster/netns-up.sh), the
# cluster runs on those namespace hosts instead, so that one node's link can be cut. As on
# a cluster with a separate data network, SLURM's own traffic has a management network:
# each host gets a second link, mgmt0 (10.78.0.(I+1)/24, on a bridge "mgmt" in the hub
# namespace), slurmctld runs in the hub at 10.78.0.254, the slurmd of nodeI inside nodeI's
# namespace (host name nodeI, NodeAddr its mgmt0 address), and the ranks' MPI traffic
# stays on eth0 (10.77.0.0/24). Taking a host's eth0 down cuts its data link; taking its
# mgmt0 down too cuts it off entirely. (Cut off entirely, a node's slurmstepd retries its
# step-completion message to slurmctld every 60 s, by design of SLURM 22.05, and stays until
# the link is back: see tests/faults/fault_test.py.) No client can reach the controller
# from the root namespace, so two commands are written into STATE_DIR:
#   STATE_DIR/launch CMD...   CMD (srun, kolorun) on node0, with SLURM_CONF and Open MPI's
#                             TCP interfaces set to eth0's subnet (10.77.0.0/24)
#   STATE_DIR/ctl CMD...      CMD (scontrol, scancel, sinfo, squeue) in the hub namespace
# Both clusters have the same SLURM settings: no timeout of SLURM's decides when a job
# with a cut link ends (kolo's watchdog does; tests/faults/fault_test.py).
#
# Idempotent: a cluster already running in STATE_DIR is left as it is. If anything fails
# half-way, what was started is stopped again. Exit 77 (SKIP for CTest) when this machine
# cannot run it (not root, packages not installable). Several clusters can run at once in
# different STATE_DIRs (each takes its own free ports), but only one --netns cluster on one
# set of namespace hosts: its management links and addresses have fixed names.
#
# Facts this rests on (Debian 12, SLURM 22.05, Open MPI 4.1):
#  - two slurmd on one host work with the stock build when each node has its own
#    NodeHostname, Port, and %n in the spool dir, pid file and log (slurmd -N nodeX);
#  - mpi/pmix puts per-step dirs under TmpFS (default /tmp): the second slurmd then fails
#    with "File exists", hence TmpFS=STATE_DIR/tmp/%n;
#  - Open MPI's shared-memory segments are named after host name, job and local rank in
#    /dev/shm, so ranks of two logical nodes collide (SIGSEGV in vader) unless a TaskProlog
#    gives each node its own backing directory;
#  - Debian's Open MPI has no SLURM PMI-1/2 support: srun needs --mpi=pmix (MpiDefault here).
source "$(dirname "$0")/lib.sh"

NETNS=""
if (($# > 1)) && [[ "$1" == --netns ]]; then NETNS="$(realpath -m "$2")"; shift 2; fi
cluster_up_args "$@"
nodes=$HOSTS cpus=$SLOTS   # SLURM's words
D="$STATE"
# Unix sockets (munge, pmix) live under D and their paths must stay under 108 bytes.
((${#D} <= 48)) || cluster_die "STATE_DIR '$D' is too long (${#D} > 48 characters; sockets go under it)"

cluster_need_root
cluster_require slurmctld slurmd slurm-client munge slurm-wlm-basic-plugins libpmix-dev openmpi-bin
# slurm's mpi/pmix plugin dlopen()s the unversioned libpmix.so that only libpmix-dev ships.
compgen -G "/usr/lib/*/libpmix.so" >/dev/null || cluster_missing "libpmix.so not found (package libpmix-dev)"

alive() { [[ -f "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

# ---- where the daemons run: here, or on the namespace hosts of --netns
ctld_addr=127.0.0.1
in_hub() { "$@"; }                        # slurmctld and the clients
on_node() { shift; "$@"; }                # on_node nodeI CMD...: slurmd of nodeI
node_addr() { echo 127.0.0.1; }
if [[ -n "$NETNS" ]]; then
  [[ -f "$NETNS/env.sh" && -x "$NETNS/on" ]] || cluster_die "--netns $NETNS: no namespace hosts there (tools/cluster/netns-up.sh)"
  ns_tag="$(sed -n 's/^KOLO_TOOL_NETNS_TAG=//p' "$NETNS/env.sh")"
  ns_hosts="$(sed -n 's/^KOLO_TOOL_NETNS_HOSTS=//p' "$NETNS/env.sh")"
  ns_net="$(sed -n 's/^KOLO_TOOL_NETNS_SUBNET=//p' "$NETNS/env.sh")"; ns_net="${ns_net%.0/24}"
  [[ -e "/run/netns/${ns_tag}-hub" ]] || cluster_die "--netns $NETNS: its hub namespace ${ns_tag}-hub is gone"
  ((ns_hosts >= nodes)) || cluster_die "--netns $NETNS has $ns_hosts hosts, $nodes needed"
  mgmt_net=10.78.0
  ctld_addr="$mgmt_net.254"
  in_hub() { ip netns exec "${ns_tag}-hub" "$@"; }
  # `ip netns exec` gives each namespace a fresh /sys without the cgroup mounts, and
  # slurmd's cgroup plugin (22.05 always loads one) fails without them: slurmd mounts, in
  # its own mount namespace, the cgroup hierarchies this machine has.
  on_node() {
    local host="$1"; shift
    "$NETNS/on" "$host" /bin/sh -c "$(cgroup_mounts) && exec \"\$@\"" slurmd-on-"$host" "$@"
  }
  node_addr() { echo "$mgmt_net.$((${1#node} + 1))"; }
  cgroup_mounts() {
    awk '$2 ~ "^/sys/fs/cgroup(/|$)" {
           cmd = cmd sep ($2 == "/sys/fs/cgroup" ? "" : "mkdir -p " $2 " && ") \
                 "mount -t " $3 " -o " $4 " " $1 " " $2; sep = " && " }
         END { print (cmd == "" ? "true" : cmd) }' /proc/mounts
  }
fi

if alive "$D/munged.pid" && alive "$D/slurmctld.pid" && [[ -f "$D/env.sh" ]]; then
  cluster_log "already running in $D"; exit 0
fi
# Leftovers of a run that died half-way: stop them and start clean.
[[ -d "$D" ]] && "$(dirname "$0")/slurm-down.sh" "$D" >/dev/null 2>&1
trap '(($? == 0)) || { cluster_log "failed; logs:"; tail -n 5 "$D"/log/*.log >&2 2>/dev/null; "$(dirname "$0")/slurm-down.sh" "$D" >/dev/null 2>&1; }' EXIT

mkdir -p "$D"/{munge,ctld,log,spool,tmp}
chmod 700 "$D" "$D/munge"
if [[ -n "$NETNS" ]]; then
  # Written first, so that slurm-down.sh finds the hub even if we fail half-way.
  printf 'KOLO_SLURM_NETNS=%s\nKOLO_SLURM_HUB=%s\n' "$NETNS" "${ns_tag}-hub" >"$D/netns"
  # The management network: made directly inside the namespaces, like netns-up.sh's links.
  hub="${ns_tag}-hub"
  ip -n "$hub" link del mgmt 2>/dev/null || true   # left by a run that died half-way
  ip -n "$hub" link add mgmt type bridge
  ip -n "$hub" addr add "$ctld_addr/24" dev mgmt
  ip -n "$hub" link set mgmt up
  for ((i = 0; i < nodes; i++)); do
    ip -n "$hub" link del "m$i" 2>/dev/null || true
    ip link add mgmt0 netns "${ns_tag}-node$i" type veth peer name "m$i" netns "$hub"
    ip -n "${ns_tag}-node$i" addr add "$(node_addr "node$i")/24" dev mgmt0
    ip -n "${ns_tag}-node$i" link set mgmt0 up
    ip -n "$hub" link set "m$i" master mgmt up
  done
fi
# Two clusters starting at once (two build folders' tests) would pick the same free ports:
# the choice is serialized until our daemons listen on them (the lock goes with this script).
exec 9>"/tmp/kolo-slurm-ports.lock"
flock -w 120 9 || cluster_die "another slurm-up.sh holds /tmp/kolo-slurm-ports.lock for over 2 minutes"
ports="$(cluster_free_port_base 400)"   # ctld, one per slurmd, then srun's range

# ---- munge: a private key and socket (never /etc/munge or /run/munge)
dd if=/dev/urandom of="$D/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$D/munge/munge.key"
munged --force --key-file="$D/munge/munge.key" --socket="$D/munge/munge.socket" \
  --pid-file="$D/munged.pid" --log-file="$D/log/munged.log" --seed-file="$D/munge/munged.seed" 9>&-
for _ in $(seq 50); do [[ -S "$D/munge/munge.socket" ]] && break; sleep 0.1; done
timeout 5 munge -S "$D/munge/munge.socket" -n </dev/null | timeout 5 unmunge -S "$D/munge/munge.socket" >/dev/null ||
  cluster_die "munge does not answer (see $D/log/munged.log)"

# ---- configuration
{
  cat <<CONF
ClusterName=kolo
SlurmctldHost=localhost($ctld_addr)
SlurmctldPort=$ports
SrunPortRange=$((ports + 100))-$((ports + 399))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$D/munge/munge.socket
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$D/ctld
SlurmdSpoolDir=$D/spool/%n
TmpFS=$D/tmp/%n
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.%n.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.%n.log
TaskProlog=$D/task_prolog.sh
# No cgroup confinement (one kernel shared by all nodes); CPUs may exceed the real cores.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SlurmdParameters=config_overrides
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=pmix
ReturnToService=2
MailProg=/bin/true
KillWait=5
InactiveLimit=0
# sbatch --wait polls every 2 s only while that is under MinJobAge/2, then every 8, 32 s.
MinJobAge=5
SlurmdTimeout=60
CONF
  for ((i = 0; i < nodes; i++)); do
    echo "NodeName=node$i NodeHostname=node$i NodeAddr=$(node_addr "node$i") Port=$((ports + 1 + i)) CPUs=$cpus RealMemory=1000 State=UNKNOWN"
  done
  echo "PartitionName=debug Nodes=node[0-$((nodes - 1))] Default=YES MaxTime=INFINITE State=UP"
} >"$D/slurm.conf"
# 22.05 always loads a cgroup plugin (CgroupPlugin=disabled came in 23.x); autodetect works.
echo "CgroupAutomount=yes" >"$D/cgroup.conf"
# slurmstepd adds the "export K=V" lines a TaskProlog prints to the task's environment.
cat >"$D/task_prolog.sh" <<'PROLOG'
#!/bin/sh
d="$(dirname "$0")/tmp/${SLURMD_NODENAME:-unknown}"
mkdir -p "$d"
echo "export TMPDIR=$d"
echo "export OMPI_MCA_btl_vader_backing_directory=$d"
PROLOG
chmod 755 "$D/task_prolog.sh"
echo "export SLURM_CONF=$D/slurm.conf" >"$D/env.sh"
export SLURM_CONF="$D/slurm.conf"
if [[ -n "$NETNS" ]]; then
  cat >"$D/launch" <<LAUNCH
#!/bin/sh
# launch CMD...: CMD (srun, kolorun --launcher srun) on node0 of $NETNS, with this cluster's
# SLURM_CONF and Open MPI's TCP traffic on eth0's subnet (as $NETNS/launch sets it).
export SLURM_CONF="$D/slurm.conf"
export OMPI_MCA_oob_tcp_if_include=$ns_net.0/24
export OMPI_MCA_btl_tcp_if_include=$ns_net.0/24
if [ "\$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
exec "$NETNS/on" node0 "\$@"
LAUNCH
  cat >"$D/ctl" <<CTL
#!/bin/sh
# ctl CMD...: CMD (scontrol, scancel, sinfo, squeue) where the controller is reachable.
export SLURM_CONF="$D/slurm.conf"
exec ip netns exec "${ns_tag}-hub" "\$@"
CTL
  chmod 755 "$D/launch" "$D/ctl"
fi

# ---- daemons: the controller, then one slurmd per logical node
in_hub slurmctld -f "$SLURM_CONF" -i -c 9>&-   # (9>&-: the daemons must not keep the port lock)
for _ in $(seq 100); do in_hub timeout 5 scontrol ping 2>/dev/null | grep -q UP && break; sleep 0.2; done
alive "$D/slurmctld.pid" || cluster_die "slurmctld did not start"
for ((i = 0; i < nodes; i++)); do
  mkdir -p "$D/spool/node$i" "$D/tmp/node$i"
  on_node "node$i" slurmd -f "$SLURM_CONF" -N "node$i" 9>&-
done
idle=0
for _ in $(seq 150); do
  idle="$(in_hub timeout 5 sinfo -h -N -o '%T' 2>/dev/null | grep -c '^idle' || true)"
  ((idle >= nodes)) && break
  sleep 0.2
done
((idle >= nodes)) || cluster_die "only $idle of $nodes nodes became idle"
if [[ -n "$NETNS" ]]; then
  cluster_log "$nodes nodes x $cpus CPUs up on the namespace hosts of $NETNS (slurmctld $ctld_addr:$ports); $D/launch srun ..."
else
  cluster_log "$nodes nodes x $cpus CPUs up (ports $ports..); source $D/env.sh"
fi
