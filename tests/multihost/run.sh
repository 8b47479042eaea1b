#!/bin/sh
# run.sh DIR LAUNCHER HOSTS PPN PROGRAM [ARGS...]: runs PROGRAM as HOSTS x
# PPN ranks on the hosts node0 .. node<HOSTS-1> of DIR (tests/multihost/
# hosts.sh), started by LAUNCHER from the host "head":
#   hydra   mpiexec.hydra -launcher ssh -launcher-exec DIR/enter
#           -f HOSTFILE -n N (HOSTFILE: "node<i>:PPN" lines)
#   mpirun  mpirun --mca plm_rsh_agent DIR/enter --hostfile HOSTFILE -n N
#           --map-by ppr:PPN:node (HOSTFILE: "node<i> slots=PPN"), as root
#           --allow-run-as-root --oversubscribe; -x passes each LCI_*
#           variable of the environment
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
    for v in $(env | sed -n 's/^\(LCI_[A-Za-z0-9_]*\)=.*/\1/p'); do xs="$xs -x $v"; done
    # shellcheck disable=SC2086
    set -- mpirun --allow-run-as-root --oversubscribe \
      --mca plm_rsh_agent "$dir/enter" --hostfile "$hostfile" -n "$n" \
      --map-by "ppr:$ppn:node" $xs "$@" ;;
  *) echo "run.sh: launcher hydra or mpirun"; exit 2 ;;
esac
before=$(ls /dev/shm 2>/dev/null | grep '^lci-shm-' | sort)
unset FI_TCP_IFACE FI_SOCKETS_IFACE
echo "run.sh: + $*"
timeout -s KILL "${LCI_MULTIHOST_TIMEOUT:-150}" \
  nsenter -t "$(cat "$dir/head.pid")" -n -u -m -- "$@"
status=$?
[ $status -eq 137 ] && { echo "run.sh: timed out"; status=124; }
rm -f "$hostfile"
# nothing may be left in the hosts
left=$(sh "$here/hosts.sh" clean "$dir")
if [ -n "$left" ]; then
  echo "run.sh: processes left in the hosts (killed): $left"
  [ $status -eq 0 ] && status=1
fi
after=$(ls /dev/shm 2>/dev/null | grep '^lci-shm-' | sort)
for f in $(printf '%s\n%s\n' "$before" "$after" | sort | uniq -u); do
  pid=$(echo "$f" | cut -d- -f3)
  [ -d "/proc/$pid" ] && continue  # a live process's: someone else's
  echo "run.sh: /dev/shm/$f is left behind"
  [ $status -eq 0 ] && status=1
done
echo "run.sh: exit status $status"
exit $status
