#!/usr/bin/env bash
# shape.sh - limits the fake hosts' links (made by netns-up.sh) like a slower network:
# each host's eth0 sends at most RATE, optionally after a one-way DELAY.
#
#   tools/cluster/shape.sh STATE_DIR --rate 1gbit [--delay 100us]
#   tools/cluster/shape.sh STATE_DIR --clear
#   tools/cluster/shape.sh STATE_DIR --show
#
# The rate is a tbf (token bucket) on eth0's egress, inside the host's namespace. A delay
# needs sch_netem, which some kernels lack (the CI's Firecracker kernel has neither netem
# nor a module for it): then --delay fails with a message rather than being ignored,
# since figures measured without it would be silently wrong.
source "$(dirname "$0")/lib.sh"

(($# >= 2)) || cluster_die "usage: shape.sh STATE_DIR --rate R [--delay T] | --clear | --show"
D="$(realpath -m "$1")"; shift
[[ -f "$D/env.sh" ]] || cluster_die "no fake hosts in $D (run netns-up.sh first)"
source "$D/env.sh"
rate="" delay="" action=apply
while (($#)); do
  case "$1" in
    --rate) rate="$2"; shift 2 ;;
    --delay) delay="$2"; shift 2 ;;
    --clear) action=clear; shift ;;
    --show) action=show; shift ;;
    *) cluster_die "unknown option $1" ;;
  esac
done
[[ $action != apply || -n "$rate$delay" ]] || cluster_die "give --rate and/or --delay"
[[ -z "$rate" || "$rate" =~ ^[0-9.]+[kmg]?bit$ ]] || cluster_die "--rate '$rate': expected e.g. 500mbit, 10gbit"

hosts=()
for ((i = 0; i < KOLO_TOOL_NETNS_HOSTS; i++)); do hosts+=("${KOLO_TOOL_NETNS_TAG}-node$i"); done

# The bucket holds about 1 ms of traffic but at least 128 KiB (two 64 KiB GSO packets):
# a smaller one throttles far below the rate.
burst_bytes() {
  awk -v r="$1" 'BEGIN { u = tolower(r); v = u + 0; sub(/^[0-9.]+/, "", u);
    m = (u ~ /^g/) ? 1e9 : (u ~ /^m/) ? 1e6 : (u ~ /^k/) ? 1e3 : 1;
    b = v * m / 8 / 1000; if (b < 131072) b = 131072; printf "%d", b }'
}
tbf() { echo tbf rate "$rate" burst "$(burst_bytes "$rate")" latency 20ms; }

for ns in "${hosts[@]}"; do
  case $action in
    clear) tc -n "$ns" qdisc del dev eth0 root 2>/dev/null || true ;;
    show) echo "${ns#"$KOLO_TOOL_NETNS_TAG"-}: $(tc -n "$ns" qdisc show dev eth0 | head -n 2 | tr '\n' ' ')" ;;
    apply)
      tc -n "$ns" qdisc del dev eth0 root 2>/dev/null || true
      if [[ -n "$delay" ]]; then
        tc -n "$ns" qdisc add dev eth0 root handle 1: netem delay "$delay" limit 100000 2>/dev/null ||
          cluster_die "--delay needs the kernel's sch_netem qdisc, which this kernel ($(uname -r)) does not have; shape the rate only"
        # shellcheck disable=SC2046  # tbf's arguments are words
        [[ -z "$rate" ]] || tc -n "$ns" qdisc add dev eth0 parent 1:1 handle 10: $(tbf)
      else
        # shellcheck disable=SC2046
        tc -n "$ns" qdisc add dev eth0 root handle 10: $(tbf)
      fi ;;
  esac
done
[[ $action == apply ]] && cluster_log "each host's eth0: ${rate:+rate $rate}${delay:+, delay $delay}"
exit 0
