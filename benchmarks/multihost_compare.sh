#!/bin/sh
# multihost_compare.sh [COMPARE ARGS...]: our benchmarks across two hosts
# (one rank each) against Open MPI (pml ob1, btl tcp) and MPICH (ch4:ucx
# over tcp), placed the same way and alternated point by point: the
# 8-byte ping-pong (mh-latency), the windowed 8-byte message rate with 1
# and 2 threads (mh-msgrate: a device or communicator per thread, and one
# shared), bandwidth from 64 KiB to 16 MiB (mh-bandwidth). Ours is on the
# default route between the hosts (hybrid over the socket backend); add
# lci-ofi to --libs for ours on the ofi route in the same alternation:
#   --libs lci,lci-ofi,mpich,openmpi
#
# The hosts are network namespaces on this machine (tests/multihost/
# hosts.sh: node0 and node1 on a private bridge, launchers started from
# "head"), built here and removed on exit; benchmarks/compare does the
# launches, statistics, CSV and plots (its --hosts mode). Needs root.
# --sweep NAME (repeatable) runs only the sweeps named. Examples:
#   benchmarks/multihost_compare.sh --build build/release --out mh-out
#   benchmarks/multihost_compare.sh --sweep mh-bandwidth --sizes 4194304
#   benchmarks/multihost_compare.sh --quick --no-plot   (a smoke run)
# Set MULTIHOST_DIR to keep the hosts' state somewhere else than a
# temporary directory.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${MULTIHOST_DIR:-$(mktemp -d /tmp/lci-mh-bench.XXXXXX)}
hosts="$root/tests/multihost/hosts.sh"
trap 'sh "$hosts" down "$dir" >/dev/null' EXIT
trap 'exit 130' INT TERM HUP
sh "$hosts" up 2 "$dir" || exit $?
# the three sweeps unless the arguments name their own
sweeps="--sweep mh-latency --sweep mh-msgrate --sweep mh-bandwidth"
for a in "$@"; do
  case $a in --sweep|--sweep=*) sweeps="" ;; esac
done
python3 "$root/benchmarks/compare" --hosts "$dir" $sweeps "$@"
