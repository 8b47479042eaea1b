#!/bin/sh
# lossy.sh DIR FAULT HOSTS PPN PROGRAM [ARGS...]: runs PROGRAM under
# mpiexec.hydra (run.sh) on the hosts of DIR (tests/multihost/hosts.sh)
# while node1's link is faulty:
#   loss1, loss5  nftables drops 1% / 5% of the packets node1's eth0 sends
#                 and receives, at random (numgen random mod 100 < N)
#   narrow        node1's eth0 sends through a token bucket (tc tbf) of
#                 20 Mbit/s with a 64 KiB burst
#   flap          node1's port of the bridge (vh1, in head) goes down for
#                 2 s, then up, every 5 s while the job runs (at most 6
#                 times)
# The program checks every message itself (mp_soak: exactly once, byte by
# byte; mp_p2p: contents); the heartbeat timeout LCI_ATTR_PEER_TIMEOUT is
# 10 s (longer than a flap), so the job must finish as if nothing had
# happened. The fault is removed afterwards, also when the job fails (and
# with the hosts in any case). Prints what was injected: the packets
# nftables dropped, the flaps done.
# Exit status: run.sh's (77: no mpiexec.hydra, nft or tc).
set -u
dir=$1 fault=$2 hosts=$3 ppn=$4
shift 4
here=$(cd "$(dirname "$0")" && pwd)
[ -x "$dir/enter" ] || { echo "lossy.sh: no hosts in $dir (hosts.sh up)"; exit 1; }
[ "$hosts" -ge 2 ] || { echo "lossy.sh: needs 2 hosts or more"; exit 2; }
on_node1() { "$dir/enter" node1 "$@"; }
on_head() { nsenter -t "$(cat "$dir/head.pid")" -n -- "$@"; }
flapper=""

remove_fault() {
  [ -n "$flapper" ] && kill "$flapper" 2>/dev/null && wait "$flapper" 2>/dev/null
  flapper=""
  case $fault in
    loss*)
      on_node1 nft list table inet lci_fault 2>/dev/null |
        sed -n 's/.*counter packets \([0-9]*\).*drop.*/\1/p' |
        awk '{ s += $1 } END { printf "lossy.sh: nftables dropped %d packets of node1\n", s }'
      on_node1 nft delete table inet lci_fault 2>/dev/null ;;
    narrow) on_node1 tc qdisc del dev eth0 root 2>/dev/null ;;
    flap) on_head ip link set vh1 up ;;
  esac
}
trap remove_fault EXIT

case $fault in
  loss1 | loss5)
    command -v nft >/dev/null || { echo "lossy.sh: no nft (scripts/deps.sh)"; exit 77; }
    pct=${fault#loss}
    on_node1 "nft add table inet lci_fault &&
      nft add chain inet lci_fault in '{ type filter hook input priority 0; }' &&
      nft add chain inet lci_fault out '{ type filter hook output priority 0; }' &&
      nft add rule inet lci_fault in iifname eth0 numgen random mod 100 '<' $pct counter drop &&
      nft add rule inet lci_fault out oifname eth0 numgen random mod 100 '<' $pct counter drop" ||
      { echo "lossy.sh: cannot add the drop rules"; exit 1; }
    echo "lossy.sh: node1 eth0 drops $pct% of its packets each way" ;;
  narrow)
    command -v tc >/dev/null || { echo "lossy.sh: no tc (iproute2)"; exit 77; }
    on_node1 tc qdisc add dev eth0 root tbf rate 20mbit burst 64kb latency 100ms ||
      { echo "lossy.sh: cannot add the tbf qdisc"; exit 1; }
    echo "lossy.sh: node1 eth0 sends through tbf 20 Mbit/s" ;;
  flap)
    (
      i=0
      while [ $i -lt 6 ]; do
        sleep 3
        on_head ip link set vh1 down
        echo "lossy.sh: vh1 down (flap $((i + 1)))"
        sleep 2
        on_head ip link set vh1 up
        i=$((i + 1))
      done
    ) &
    flapper=$!
    echo "lossy.sh: node1's link goes down for 2 s every 5 s" ;;
  *) echo "lossy.sh: FAULT is loss1, loss5, narrow or flap"; exit 2 ;;
esac

LCI_ATTR_PEER_TIMEOUT=${LCI_ATTR_PEER_TIMEOUT:-10000}
export LCI_ATTR_PEER_TIMEOUT
sh "$here/run.sh" "$dir" hydra "$hosts" "$ppn" "$@"
status=$?
remove_fault
trap - EXIT
echo "lossy.sh: $fault: exit status $status"
exit $status
