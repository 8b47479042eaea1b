#!/bin/sh
# slurm.sh DIR HOSTS PPN MPI PROGRAM [ARGS...]: a Slurm cluster across the
# hosts of DIR (tests/multihost/hosts.sh), one slurmd per host, runs
# `srun --mpi=MPI -N HOSTS -n HOSTS*PPN --ntasks-per-node=PPN PROGRAM` from
# the host "head", then stops the cluster.
#
# munged (its own key and socket in a temporary directory) and slurmctld
# run in head (SlurmctldHost=head, 10.213.7.254), slurmd in node<i> as
# NodeName=node<i> with NodeAddr its eth0 address; SlurmdParameters=
# config_overrides lets every node claim 4 CPUs. The ports are Slurm's
# defaults: every host has its own network stack. TmpFS is DIR/local/self,
# each host's own directory (the PMIx plugin makes a directory per step
# there, by the same name on every node), in a subdirectory of this
# cluster's own: job ids restart at 1 in every cluster, and a directory
# of an earlier cluster's step 1.0 that its killed slurmstepd left would
# make the PMIx plugin refuse the new step 1.0. The daemons are started by this
# script and stopped by the pids it recorded (TERM, then KILL), also on
# failure; what a job leaves in the hosts is killed by hosts.sh clean.
# Exit status: srun's (124: timeout after LCI_MULTIHOST_TIMEOUT s, default
# 120); 77 when Slurm or munge is not installed; 1 when the cluster does
# not come up.
set -u
dir=$1 hosts=$2 ppn=$3 mpi=$4
shift 4
here=$(cd "$(dirname "$0")" && pwd)
for b in munged mungekey slurmctld slurmd srun sinfo; do
  command -v $b >/dev/null 2>&1 || { echo "slurm.sh: $b not found (scripts/deps.sh)"; exit 77; }
done
[ -x "$dir/enter" ] || { echo "slurm.sh: no hosts in $dir"; exit 1; }
c=$(mktemp -d /tmp/lci-mh-slurm.XXXXXX) || exit 1
id=$(basename "$c")
pids=""
cleanup() {
  for p in $pids; do kill -TERM "$p" 2>/dev/null; done
  i=0
  for p in $pids; do
    while kill -0 "$p" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    kill -KILL "$p" 2>/dev/null
  done
  left=$(sh "$here/hosts.sh" pids "$dir")
  if [ -n "$left" ]; then
    echo "slurm.sh: left in the hosts after the daemons stopped (killed):"
    ps -o pid,args -p "$(echo $left | tr ' ' ,)" 2>/dev/null
    sh "$here/hosts.sh" clean "$dir" >/dev/null
  fi
  for h in $(cat "$dir/hosts" 2>/dev/null); do rm -rf "$dir/local/$h/$id"; done
  rm -rf "$c"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
# daemon NAME HOST CMD...: starts CMD in HOST (nsenter and env exec it:
# $! is the daemon's pid)
daemon() {
  name=$1 h=$2
  shift 2
  nsenter -t "$(cat "$dir/$h.pid")" -n -u -m -- env -u SLURM_CONF "$@" \
    </dev/null >"$c/$name.out" 2>&1 &
  pids="$pids $!"
}
for h in $(cat "$dir/hosts"); do mkdir -p "$dir/local/$h/$id"; done
mkdir -p "$c/state" "$c/munge"
i=0
while [ $i -lt "$hosts" ]; do mkdir -p "$c/spool/node$i"; i=$((i + 1)); done
chmod 700 "$c/munge"
mungekey --create --keyfile="$c/munge/munge.key" --bits=1024 >/dev/null 2>&1 ||
  { echo "slurm.sh: mungekey failed"; exit 1; }
chmod 400 "$c/munge/munge.key"
daemon munged head munged --foreground --force --socket="$c/munge/socket" \
  --key-file="$c/munge/munge.key" --log-file="$c/munged.log" \
  --pid-file="$c/munge/munged.pid" --seed-file="$c/munge/seed"
nodes=""
i=0
while [ $i -lt "$hosts" ]; do nodes="$nodes${nodes:+,}node$i"; i=$((i + 1)); done
{
  cat <<CONF
ClusterName=lcimultihost
SlurmctldHost=head(10.213.7.254)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$c/munge/socket
StateSaveLocation=$c/state
SlurmdSpoolDir=$c/spool/%n
SlurmctldPidFile=$c/slurmctld.pid
SlurmdPidFile=$c/slurmd.%n.pid
SlurmctldLogFile=$c/slurmctld.log
SlurmdLogFile=$c/slurmd.%n.log
TmpFS=$dir/local/self/$id
CONF
  grep -v '^#' "$here/../slurm/common.conf"
  i=0
  while [ $i -lt "$hosts" ]; do
    echo "NodeName=node$i NodeAddr=10.213.7.$((i + 1)) CPUs=4 RealMemory=1000 State=UNKNOWN"
    i=$((i + 1))
  done
  echo "PartitionName=lci Nodes=$nodes Default=YES MaxTime=10 State=UP"
} >"$c/slurm.conf"
i=0
until [ -S "$c/munge/socket" ]; do
  i=$((i + 1)); [ $i -gt 100 ] && { echo "slurm.sh: munged did not start"; cat "$c/munged.out"; exit 1; }
  sleep 0.1
done
daemon slurmctld head slurmctld -D -i -f "$c/slurm.conf"
i=0
while [ $i -lt "$hosts" ]; do
  daemon "slurmd$i" "node$i" slurmd -D -f "$c/slurm.conf" -N "node$i"
  i=$((i + 1))
done
# every node idle
i=0
while :; do
  idle=$(SLURM_CONF=$c/slurm.conf nsenter -t "$(cat "$dir/head.pid")" -n -u -m -- \
         timeout 5 sinfo -h -N -o %T 2>/dev/null | grep -c '^idle$')
  [ "$idle" -eq "$hosts" ] && break
  i=$((i + 1))
  if [ $i -gt 150 ]; then
    echo "slurm.sh: $idle of $hosts nodes idle after 30 s"
    tail -n 20 "$c"/*.log
    exit 1
  fi
  sleep 0.2
done
echo "slurm.sh: cluster up ($nodes)"
unset FI_TCP_IFACE FI_SOCKETS_IFACE
echo "slurm.sh: + srun --mpi=$mpi -N $hosts -n $((hosts * ppn)) --ntasks-per-node=$ppn $*"
# timeout's own status is 124 (TERM) or 137 (KILL 10 s later); srun's
# 137 is a task killed, so the two are told apart by timeout's 124 alone
SLURM_CONF=$c/slurm.conf timeout -k 10 "${LCI_MULTIHOST_TIMEOUT:-120}" \
  nsenter -t "$(cat "$dir/head.pid")" -n -u -m -- \
  srun --mpi="$mpi" -N "$hosts" -n "$((hosts * ppn))" --ntasks-per-node="$ppn" "$@"
status=$?
[ $status -eq 124 ] && echo "slurm.sh: timed out"
if [ $status -ne 0 ]; then
  # what the daemons said about the step: the reason srun cannot see
  for f in "$c"/slurmd.*.log "$c"/slurmctld.log; do
    [ -f "$f" ] || continue
    echo "slurm.sh: $(basename "$f"), last lines:"
    tail -n 15 "$f"
  done
fi
echo "slurm.sh: exit status $status"
exit $status
