#!/bin/bash
# A/B rotations of two builds against both MPIs at the native shm eager
# limit (docs/PERFORMANCE_LOG.md, "A 16 KiB payload goes eagerly on
# native shm").
#
#   benchmarks/eager_limit_rotations.sh ROUNDS OUT.csv BUILD_A BUILD_B
#     each round: the c2c probe; then A ("main"), B ("new"), Open MPI and
#     MPICH (the MPI twins built in BUILD_A), the order rotated round by
#     round: send/recv bandwidth (window 64) and ping-pong latency at
#     $SIZES (default 16K,64K); the probe again. One row per value.
#
# Needs the c2c probe at $RAWLIMITS (default /tmp/rawlimits). Runs on this
# machine only (lcrun, loopback MPI); a benchmark, not a test.
set -u
cd "$(dirname "$0")/.."
n=$1 out=$2 mainb=$3 newb=$4
SIZES=${SIZES:-16K,64K}
RAW=${RAWLIMITS:-/tmp/rawlimits}
probe() { "$RAW" c2c 0.05 | sed -E 's/.*value=([0-9.]+).*/\1/'; }
val() { grep -v '^#' | grep -v '^benchmark' | grep -v '^size' | cut -d, -f6,8; }
ompi="timeout 120 tools/lo-netns mpirun.openmpi --allow-run-as-root --oversubscribe --bind-to none --mca btl self,vader --mca pml ob1 -n 2"
mpich="timeout 120 tools/lo-netns mpiexec.hydra -launcher fork -n 2"
run() { # LIB KIND
  case $1 in
    main|new) b=$mainb; [ $1 = new ] && b=$newb
      LCI_ATTR_BACKEND=shm timeout 200 "$b/tools/lcrun/lcrun" -n 2 "$b/benchmarks/lci_$2" --op sendrecv --sizes $SIZES $([ $2 = bandwidth ] && echo --window 64) --pin 2>&1 | val ;;
    openmpi) $ompi "$mainb/benchmarks/mpi/mpi_$2_openmpi" --sizes $SIZES $([ $2 = bandwidth ] && echo --window 64) 2>&1 | val ;;
    mpich) UCX_TLS=self,sm $mpich "$mainb/benchmarks/mpi/mpi_$2_mpich" --sizes $SIZES $([ $2 = bandwidth ] && echo --window 64) 2>&1 | val ;;
  esac
}
[ -f "$out" ] || echo "round,probe_before_ns,probe_after_ns,loadavg,library,measure,size,value" >"$out"
libs=(main new openmpi mpich)
for i in $(seq "$n"); do
  s1=$(probe); la=$(cut -d' ' -f1 /proc/loadavg)
  rows=()
  for k in 0 1 2 3; do
    lib=${libs[$(( (k + i) % 4 ))]}
    for kind in bandwidth latency; do
      while read -r l; do rows+=("$lib,$kind,$l"); done < <(run $lib $kind)
    done
  done
  s2=$(probe)
  for x in "${rows[@]}"; do echo "$i,$s1,$s2,$la,$x" >>"$out"; done
  echo "round $i: probes $s1 $s2 ns load $la" >&2
done
