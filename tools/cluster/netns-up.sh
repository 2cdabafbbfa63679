#!/usr/bin/env bash
# netns-up.sh - fake "hosts" node0..nodeN-1 on this machine, each a network namespace
# with its own eth0 (10.77.0.i+1/24), all plugged into one bridge in a hub namespace, so
# that MPI traffic between hosts crosses real veth links that can be counted and shaped.
#
#   tools/cluster/netns-up.sh [--hosts 2] [--slots 2] STATE_DIR
#   STATE_DIR/launch mpirun -np 4 -H node0:2,node1:2 prog
#   KOLO_MPIRUN=STATE_DIR/mpirun kolorun -np 4 -H node0:2,node1:2 prog
#   STATE_DIR/on node1 ip -s link show eth0                   # a command "on" node1
#   tools/cluster/netns-down.sh STATE_DIR
#
# Writes into STATE_DIR: env.sh (the names), hostfile, and four commands:
#   on HOST CMD...   runs CMD in HOST's namespace, with its own UTS namespace whose host
#                    name is HOST (MPI_Get_processor_name, and Open MPI's shared-memory
#                    segment names, then differ per fake host)
#   rsh HOST CMD...  the same with ssh's calling convention: Open MPI's plm_rsh_agent
#   launch CMD...    runs CMD (mpirun, kolorun) on node0 with Open MPI pointed at the
#                    fake hosts through OMPI_MCA_* variables: rsh as the launch agent, the
#                    bridge subnet for its daemons and for TCP traffic. mpirun must itself
#                    run in a namespace: a daemon in node1 cannot reach the root namespace.
#   mpirun ARGS...   launch mpirun ARGS: for kolorun, KOLO_MPIRUN=STATE_DIR/mpirun kolorun ...
#                    (with OMPI_MCA_plm_rsh_agent=STATE_DIR/rsh too, kolorun can end what a
#                    failed job leaves on a host: launcher/remote_kill.h)
#
# Namespace names carry a tag made from STATE_DIR, so two sets (two build folders' tests)
# can exist at once; the host names seen by MPI are always node0, node1, ... Nothing is
# added to the root namespace. Idempotent; on failure what was made is removed again.
# Exit 77 (SKIP for CTest) when this machine cannot do it (not root, no `ip netns`).
source "$(dirname "$0")/lib.sh"

cluster_up_args "$@"
hosts=$HOSTS slots=$SLOTS
D="$(realpath -m "$STATE")"
tag="k$(printf '%s' "$D" | md5sum | cut -c1-6)"   # namespace name prefix for this STATE_DIR
net=10.77.0

cluster_need_root
cluster_require iproute2 util-linux openmpi-bin
command -v unshare >/dev/null || cluster_missing "unshare not found (package util-linux)"
# Probe what the test needs from the kernel: creating a namespace and a UTS namespace.
probe="${tag}-probe"
ip netns add "$probe" 2>/dev/null || cluster_missing "cannot create network namespaces (ip netns add failed: no CAP_SYS_ADMIN, or no netns support in this kernel/container)"
ip netns exec "$probe" unshare --uts true 2>/dev/null || { ip netns del "$probe"; cluster_missing "cannot create UTS namespaces (unshare --uts failed)"; }
ip netns del "$probe"

exists() { [[ -e "/run/netns/$1" ]]; }
if [[ -f "$D/env.sh" ]] && grep -qx "KOLO_TOOL_NETNS_HOSTS=$hosts" "$D/env.sh" && exists "${tag}-hub"; then
  up=1
  for ((i = 0; i < hosts; i++)); do exists "${tag}-node$i" || up=0; done
  ((up)) && { cluster_log "$hosts hosts already up ($D)"; exit 0; }
fi
"$(dirname "$0")/netns-down.sh" "$D" >/dev/null 2>&1
trap '(($? == 0)) || "$(dirname "$0")/netns-down.sh" "$D" >/dev/null 2>&1' EXIT
mkdir -p "$D"
# Written first so that netns-down.sh finds the names even if we fail half-way.
cat >"$D/env.sh" <<ENV
KOLO_TOOL_NETNS_TAG=$tag
KOLO_TOOL_NETNS_HOSTS=$hosts
KOLO_TOOL_NETNS_SUBNET=$net.0/24
ENV

hub="${tag}-hub"
ip netns add "$hub"
ip -n "$hub" link set lo up
ip -n "$hub" link add br0 type bridge
ip -n "$hub" link set br0 up
: >"$D/hostfile"
for ((i = 0; i < hosts; i++)); do
  ns="${tag}-node$i"
  ip netns add "$ns"
  # Made directly inside the two namespaces: no interface ever appears in the root one.
  ip link add "eth0" netns "$ns" type veth peer name "h$i" netns "$hub"
  ip -n "$ns" addr add "$net.$((i + 1))/24" dev eth0
  ip -n "$ns" link set lo up
  ip -n "$ns" link set eth0 up
  ip -n "$hub" link set "h$i" master br0 up
  echo "node$i slots=$slots" >>"$D/hostfile"
done

cat >"$D/on" <<ON
#!/bin/sh
# on HOST CMD...: HOST is node<i> or 10.77.0.<i+1>
case "\$1" in
  $net.*) host="node\$(( \${1##*.} - 1 ))" ;;
  *) host="\${1%%.*}" ;;
esac
shift
[ -e "/run/netns/${tag}-\$host" ] || { echo "on: no fake host '\$host' in $D" >&2; exit 255; }
exec ip netns exec "${tag}-\$host" unshare --uts /bin/sh -c 'hostname "\$0" && exec "\$@"' "\$host" "\$@"
ON
cat >"$D/rsh" <<RSH
#!/bin/sh
# Called by Open MPI as "rsh [ssh options] HOST WORDS...": like ssh, a shell on HOST runs
# the words joined by spaces.
while [ \$# -gt 0 ] && [ "\${1#-}" != "\$1" ]; do shift; done
host="\$1"; shift
exec "$D/on" "\$host" /bin/sh -c "\$*"
RSH
cat >"$D/launch" <<LAUNCH
#!/bin/sh
# launch CMD...: CMD runs on node0 with Open MPI set up for the fake hosts. Hosts come
# from -H or the hostfile (OMPI_MCA_orte_default_hostfile).
export OMPI_MCA_plm_rsh_agent="$D/rsh"
export OMPI_MCA_orte_default_hostfile="$D/hostfile"
export OMPI_MCA_oob_tcp_if_include=$net.0/24
export OMPI_MCA_btl_tcp_if_include=$net.0/24
export OMPI_MCA_btl="\${KOLO_TOOL_NETNS_BTL:-tcp,self,vader}"
export OMPI_MCA_rmaps_base_oversubscribe=1
if [ "\$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
exec "$D/on" node0 "\$@"
LAUNCH
# kolorun takes this as KOLO_MPIRUN (it then skips its host-name lookup, since node1
# only means something to rsh).
printf '#!/bin/sh\nexec "%s/launch" mpirun "$@"\n' "$D" >"$D/mpirun"
chmod 755 "$D/on" "$D/rsh" "$D/launch" "$D/mpirun"

# A ping reply, or a refused TCP connection where ping is not installed, proves the path.
for ((i = 1; i < hosts; i++)); do
  timeout 5 ip netns exec "${tag}-node0" ping -c1 -W2 "$net.$((i + 1))" >/dev/null 2>&1 ||
    [[ "$(timeout 5 ip netns exec "${tag}-node0" bash -c "exec 3<>/dev/tcp/$net.$((i + 1))/1" 2>&1)" == *refused* ]] ||
    cluster_die "node0 cannot reach node$i ($net.$((i + 1))) over the bridge"
done
cluster_log "$hosts hosts node0..node$((hosts - 1)) on $net.0/24 (namespaces ${tag}-*); state in $D"
