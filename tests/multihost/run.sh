#!/bin/sh
# run.sh DIR LAUNCHER HOSTS PPN PROGRAM [ARGS...]: runs PROGRAM as HOSTS x
# PPN ranks on the hosts node0 .. node<HOSTS-1> of DIR (tests/multihost/
# hosts.sh), started by LAUNCHER from the host "head":
#   hydra   mpiexec.hydra -launcher ssh -launcher-exec DIR/enter
#           -f HOSTFILE -n N (HOSTFILE: "node<i>:PPN" lines)
#   mpirun  mpirun --mca plm_rsh_agent DIR/enter --hostfile HOSTFILE -n N
#           --map-by ppr:PPN:node (HOSTFILE: "node<i> slots=PPN"), as root
#           --allow-run-as-root --oversubscribe; -x passes each LCI_*
#           and SOAK_* variable of the environment (SOAK_SEED: mp_soak)
# Ranks are placed in blocks: rank r on node<r / PPN>.
# The launcher sees this environment without FI_TCP_IFACE and
# FI_SOCKETS_IFACE (the ctest presets set them to lo for the one-host
# tests): the library must find the hosts' interface itself.
# Bounded by LCI_MULTIHOST_TIMEOUT seconds (default 150). Afterwards
# every process left in the hosts is killed and reported (a failure), and
# so is a native shared-memory segment of a rank left in /dev/shm.
# Exit status: the launcher's (124: timeout); 77 when the launcher is not
# installed.
set -u
dir=$1 launcher=$2 hosts=$3 ppn=$4
shift 4
here=$(cd "$(dirname "$0")" && pwd)
[ -x "$dir/enter" ] || { echo "run.sh: no hosts in $dir (hosts.sh up)"; exit 1; }
n=$((hosts * ppn))
hostfile=$dir/hostfile.$$
: >"$hostfile"
i=0
while [ $i -lt "$hosts" ]; do
  if [ "$launcher" = hydra ]; then echo "node$i:$ppn"; else echo "node$i slots=$ppn"; fi >>"$hostfile"
  i=$((i + 1))
done
case $launcher in
  hydra)
    command -v mpiexec.hydra >/dev/null || { echo "run.sh: no mpiexec.hydra"; exit 77; }
    set -- mpiexec.hydra -launcher ssh -launcher-exec "$dir/enter" \
      -f "$hostfile" -n "$n" "$@" ;;
  mpirun)
    command -v mpirun >/dev/null || { echo "run.sh: no mpirun"; exit 77; }
    xs=""
    for v in $(env | sed -n 's/^\(\(LCI\|SOAK\)_[A-Za-z0-9_]*\)=.*/\1/p'); do xs="$xs -x $v"; done
    # shellcheck disable=SC2086
    set -- mpirun --allow-run-as-root --oversubscribe \
      --mca plm_rsh_agent "$dir/enter" --hostfile "$hostfile" -n "$n" \
      --map-by "ppr:$ppn:node" $xs "$@" ;;
  *) echo "run.sh: launcher hydra or mpirun"; exit 2 ;;
esac
# the pids seen in the hosts, sampled while the launcher runs: the
# segments left behind are those of these processes
pidlog=$dir/pids.$$
: >"$pidlog"
(while :; do sh "$here/hosts.sh" pids "$dir" >>"$pidlog"; sleep 0.2; done) &
sampler=$!
unset FI_TCP_IFACE FI_SOCKETS_IFACE
echo "run.sh: + $*"
timeout -s KILL "${LCI_MULTIHOST_TIMEOUT:-150}" \
  nsenter -t "$(cat "$dir/head.pid")" -n -u -m -- "$@"
status=$?
[ $status -eq 137 ] && { echo "run.sh: timed out"; status=124; }
kill $sampler 2>/dev/null
wait $sampler 2>/dev/null
rm -f "$hostfile"
# nothing may be left in the hosts
left=$(sh "$here/hosts.sh" clean "$dir")
if [ -n "$left" ]; then
  echo "run.sh: processes left in the hosts (killed): $left"
  [ $status -eq 0 ] && status=1
fi
for pid in $(sort -u "$pidlog"); do
  for f in /dev/shm/lci-shm-"$pid"-*; do
    [ -e "$f" ] || continue
    [ -d "/proc/$pid" ] && continue  # the pid is someone else's now
    echo "run.sh: $f is left behind (removed)"
    rm -f "$f"
    [ $status -eq 0 ] && status=1
  done
done
rm -f "$pidlog"
echo "run.sh: exit status $status"
exit $status
