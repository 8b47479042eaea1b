#!/bin/bash
# Rotations of the native shm backend's RMA and rendezvous latencies
# (docs/PERFORMANCE_LOG.md, "Native shm RMA: small transfers through the
# rings").
#
#   benchmarks/shm_rma_rotations.sh libs ROUNDS OUT.csv LABEL=BUILD...
#     each rotation: the c2c probe; lci_latency (put with signal and
#     send/recv) of the library built in each BUILD, in the order given
#     (rows labelled lci_LABEL); the MPI twins (Open MPI, MPICH, built in
#     the first BUILD) at the send/recv sizes; the probe again.
#   benchmarks/shm_rma_rotations.sh small ROUNDS OUT.csv LABEL=BUILD...
#     each rotation: the probe; per BUILD in the order given, ping-pong
#     latency of active messages and send/recv from 8 B to 8 KiB, and the
#     8-byte stream of both with a window of 64 (MB/s); the MPI twins (Open
#     MPI, MPICH) of the send/recv ones; the probe again.
#   benchmarks/shm_rma_rotations.sh threshold BUILD ROUNDS OUT.csv
#     each rotation: the probe; with LCI_ATTR_SHM_CMA_THRESHOLD=0 (CMA at
#     every size) then 1 GiB (the rings at every size), put latency and
#     send/recv bandwidth (window 64) at the sizes around the threshold.
#
# Needs the c2c probe at $RAWLIMITS (default /tmp/rawlimits:
# gcc -O2 -pthread ../shared/tools/rawlimits.c -o /tmp/rawlimits). Runs
# on this machine only (lcrun, loopback MPI); a benchmark, not a test.
set -u
cd "$(dirname "$0")/.."
RAW=${RAWLIMITS:-/tmp/rawlimits}
probe() { "$RAW" c2c 0.05 | sed -E 's/.*value=([0-9.]+).*/\1/'; }
# size and median columns of a benchmark's CSV output
val() { grep -v '^#' | grep -v '^benchmark' | grep -v '^size' | cut -d, -f6,8; }
lci() {  # lci BUILD PROGRAM ARGS...
  local b=$1 prog=$2
  shift 2
  LCI_ATTR_BACKEND=shm timeout 200 "$b/tools/lcrun/lcrun" -n 2 \
    "$b/benchmarks/$prog" "$@" 2>&1 | val
}

# the MPI twins' launchers (loopback only)
ompi="timeout 120 tools/lo-netns mpirun.openmpi --allow-run-as-root \
--oversubscribe --bind-to none --mca btl self,vader --mca pml ob1 -n 2"
mpich="timeout 120 tools/lo-netns mpiexec.hydra -launcher fork -n 2"

mode=${1:-}
case "$mode" in
  libs)
    n=$2 out=$3
    shift 3
    first=${1#*=}
    echo "rotation,probe_before_ns,probe_after_ns,library,op,size,median_us" >"$out"
    for i in $(seq "$n"); do
      s1=$(probe)
      rows=()
      for lb in "$@"; do
        lib=${lb%%=*} b=${lb#*=}
        while read -r l; do rows+=("lci_$lib,put,$l"); done < <(
          lci "$b" lci_latency --op put --sizes 8,64,512,2K,4K,32K,512K)
        while read -r l; do rows+=("lci_$lib,sendrecv,$l"); done < <(
          lci "$b" lci_latency --op sendrecv --sizes 16K,32K,64K,256K)
      done
      while read -r l; do rows+=("openmpi,sendrecv,$l"); done < <(
        $ompi "$first/benchmarks/mpi/mpi_latency_openmpi" \
          --sizes 16K,32K,64K,256K 2>&1 | val)
      while read -r l; do rows+=("mpich,sendrecv,$l"); done < <(
        UCX_TLS=self,sm $mpich "$first/benchmarks/mpi/mpi_latency_mpich" \
          --sizes 16K,32K,64K,256K 2>&1 | val)
      s2=$(probe)
      for x in "${rows[@]}"; do echo "$i,$s1,$s2,$x" >>"$out"; done
      echo "rotation $i: probes $s1 $s2 ns" >&2
    done
    ;;
  small)
    n=$2 out=$3
    shift 3
    first=${1#*=}
    sizes=8,64,512,4K,8K
    # as_rows lat|bw LIBRARY: "size,median" lines as rows of the rotations
    # format that benchmarks/headline.py reads
    as_rows() {
      if [ "$1" = lat ]; then
        awk -F, -v l="$2" '{ print "pingpong" $1 "," l "," $2 ",us" }'
      else
        awk -F, -v l="$2" '{ print "stream" $1 "_w64," l "," $2 ",MB/s" }'
      fi
    }
    echo "rotation,probe_before_ns,probe_after_ns,measure,library,value,unit" >"$out"
    for i in $(seq "$n"); do
      s1=$(probe)
      rows=()
      for lb in "$@"; do
        lib=${lb%%=*} b=${lb#*=}
        for op in am sendrecv; do
          while read -r l; do rows+=("$l"); done < <(
            lci "$b" lci_latency --op $op --sizes $sizes |
              as_rows lat "lci_${lib}_$op")
          while read -r l; do rows+=("$l"); done < <(
            lci "$b" lci_bandwidth --op $op --window 64 --sizes 8 |
              as_rows bw "lci_${lib}_$op")
        done
      done
      for m in openmpi mpich; do
        if [ $m = openmpi ]; then run=$ompi; else run="env UCX_TLS=self,sm $mpich"; fi
        while read -r l; do rows+=("$l"); done < <(
          $run "$first/benchmarks/mpi/mpi_latency_$m" --sizes $sizes 2>&1 |
            val | as_rows lat $m)
        while read -r l; do rows+=("$l"); done < <(
          $run "$first/benchmarks/mpi/mpi_bandwidth_$m" --window 64 --sizes 8 \
            2>&1 | val | as_rows bw $m)
      done
      s2=$(probe)
      for x in "${rows[@]}"; do echo "$i,$s1,$s2,$x" >>"$out"; done
      echo "rotation $i: probes $s1 $s2 ns" >&2
    done
    ;;
  threshold)
    b=$2 n=$3 out=$4
    echo "round,probe_ns,mode,op,size,value" >"$out"
    for i in $(seq "$n"); do
      p=$(probe)
      for m in cma ring; do
        t=0
        [ "$m" = ring ] && t=1073741824
        export LCI_ATTR_SHM_CMA_THRESHOLD=$t
        lci "$b" lci_latency --op put --sizes 8K,16K,32K,64K,128K |
          sed "s/^/$i,$p,$m,put_us,/" >>"$out"
        lci "$b" lci_bandwidth --op sendrecv --sizes 16K,64K,256K,1M |
          sed "s/^/$i,$p,$m,bw_MBs,/" >>"$out"
        unset LCI_ATTR_SHM_CMA_THRESHOLD
      done
    done
    ;;
  *)
    sed -n '2,22p' "$0"
    exit 2
    ;;
esac
