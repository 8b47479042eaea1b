#!/usr/bin/env bash
# A private one-node Slurm cluster for the tests of this folder.
#
#   slurm_fixture.sh start HANDLE   start munged, slurmctld and slurmd
#   slurm_fixture.sh stop HANDLE    stop them (and anything left of a job)
#
# start makes a temporary directory (mktemp -d) with the cluster's own
# slurm.conf (SlurmdParameters=config_overrides: the node declares the CPUs
# the tests need, whatever the machine has), its own munge key and socket,
# state, spool, log and pid files, and two free loopback ports; it writes
# that directory's path to the file HANDLE, starts the three daemons in the
# foreground of their own sessions (their pids recorded by us, not read from
# pid files they write) and waits until sinfo shows the node idle. Then
#   . "$(cat HANDLE)/env"   sets SLURM_CONF, so srun, sbatch, salloc, sinfo
# talk to this cluster and no other.
#
# Everything listens on 127.0.0.1 (NodeAddr, SlurmctldHost, and
# CommunicationParameters=NoInAddrAny for slurmd and srun) except
# slurmctld, which Slurm 22.05 binds to every interface whatever the
# configuration; it answers only munge credentials made with this cluster's
# private key. (A loopback-only network namespace, as tools/lo-netns gives
# hydra, does not work here: Slurm cannot resolve even 127.0.0.1 in one
# that has no other interface.)
#
# Where a cluster cannot be started (not root, a package missing), start
# writes the reason to "HANDLE.skip" and exits 77 (ctest SKIP_RETURN_CODE);
# slurm_run.sh then skips every test with that reason. CI runs as root with
# the packages of scripts/deps.sh, so there the tests run.
#
# stop cancels the cluster's jobs, kills what is left of their tasks (the
# processes whose environment names this cluster's SLURM_CONF) and removes
# the native shm segments (/dev/shm/lci-shm-<pid>-*) of those it saw die,
# stops the three daemons by the pids start recorded (TERM, then KILL after
# 10 s), and removes the directory. It fails if any of them is still
# running. It is safe to run twice, or after a failed start.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# this script's own children must not look like the cluster's processes
unset SLURM_CONF

usage() {
  echo "usage: $0 start|stop HANDLE" >&2
  exit 2
}
[ $# -eq 2 ] || usage
action=$1
handle=$2

log() { echo "slurm_fixture: $*"; }

# Daemons of this cluster, in the order they are started.
daemons="munged slurmctld slurmd"

pid_alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }

# stop_pid NAME PID: TERM, wait up to 10 s, then KILL and reap.
stop_pid() {
  local name=$1 pid=$2 i
  pid_alive "$pid" || return 0
  kill -TERM "$pid" 2>/dev/null
  for i in $(seq 1 100); do
    pid_alive "$pid" || { log "stopped $name (pid $pid)"; return 0; }
    sleep 0.1
  done
  log "$name (pid $pid) ignored SIGTERM for 10 s: SIGKILL"
  kill -KILL "$pid" 2>/dev/null
  sleep 0.2
}

# Processes whose environment has SLURM_CONF=<this cluster's conf>: the
# tasks of its jobs (srun and sbatch pass the caller's environment on), and
# sruns. The daemons are started without it (they get -f), and threads
# (listed in /proc on some kernels) are skipped, as are this script and its
# ancestors (a shell that sourced the cluster's env and runs stop).
cluster_processes() {
  local conf=$1 p pid mine=" " up=$BASHPID
  while [ -n "$up" ] && [ "$up" != 0 ]; do
    mine="$mine$up "
    up=$(sed -n 's/^PPid:[[:space:]]*//p' "/proc/$up/status" 2>/dev/null)
  done
  for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    case "$mine" in *" $pid "*) continue ;; esac
    grep -qx "Tgid:[[:space:]]*$pid" "$p/status" 2>/dev/null || continue
    if { tr '\0' '\n' < "$p/environ"; } 2>/dev/null |
       grep -qxF "SLURM_CONF=$conf"; then
      echo "$pid"
    fi
  done
}

do_stop() {
  [ -f "$handle" ] || { rm -f "$handle.skip"; log "nothing to stop"; return 0; }
  local dir
  dir=$(cat "$handle")
  case "$dir" in
    /tmp/lci-slurm.*) ;;
    *) log "refusing: '$dir' (from $handle) is not a fixture directory"
       return 1 ;;
  esac
  if [ -d "$dir" ] && [ -f "$dir/slurm.conf" ]; then
    local conf=$dir/slurm.conf
    # tasks still running now may die without unlinking their native shm
    # segments (lcrun removes those of the ranks it kills; under Slurm
    # nobody does): remembered here, removed once they are gone
    local tasks
    tasks=$(cluster_processes "$conf")
    if [ -f "$dir/pid.slurmctld" ] &&
       pid_alive "$(cat "$dir/pid.slurmctld")"; then
      # the jobs first, while slurmctld and slurmd can still end them
      # properly (step cleanup)
      local jobs i
      jobs=$(SLURM_CONF=$conf timeout 5 squeue -h -o %i 2>/dev/null)
      if [ -n "$jobs" ]; then
        log "cancelling jobs left running: $(echo $jobs)"
        SLURM_CONF=$conf timeout 10 scancel $jobs 2>/dev/null
        for i in $(seq 1 50); do
          [ -z "$(SLURM_CONF=$conf timeout 5 squeue -h -o %i \
                  2>/dev/null)" ] &&
            break
          sleep 0.2
        done
      fi
    fi
    local left
    left=$(cluster_processes "$conf")
    if [ -n "$left" ]; then
      log "killing processes left by jobs: $(echo $left)"
      kill -KILL $left 2>/dev/null
    fi
    local d pid alive=""
    for d in slurmd slurmctld munged; do
      [ -f "$dir/pid.$d" ] || continue
      pid=$(cat "$dir/pid.$d")
      stop_pid "$d" "$pid"
      pid_alive "$pid" && alive="$alive $d($pid)"
    done
    left=$(cluster_processes "$conf")
    local f
    for pid in $tasks; do
      pid_alive "$pid" && continue
      for f in /dev/shm/lci-shm-"$pid"-*; do
        [ -e "$f" ] || continue
        log "removing $f of killed task $pid"
        rm -f "$f"
      done
    done
    if [ -n "$alive" ] || [ -n "$left" ]; then
      log "FAILED: still running after SIGKILL:$alive $(echo $left)"
      return 1
    fi
    # the logs stay visible in the test output when something went wrong
    if [ -n "${LCI_SLURM_KEEP:-}" ]; then
      log "kept $dir (LCI_SLURM_KEEP)"
      rm -f "$handle" "$handle.skip"
      return 0
    fi
  fi
  rm -rf "$dir"
  rm -f "$handle" "$handle.skip"
  log "removed $dir"
}

# skip REASON: this machine cannot run the cluster.
skip() {
  echo "$*" > "$handle.skip"
  echo "SKIP: $*"
  exit 77
}

# free_port: a TCP port on 127.0.0.1 that nothing listens on now.
free_port() {
  python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# start_daemon NAME COMMAND...: runs it in its own session, output to
# NAME.log, and records its pid.
start_daemon() {
  local name=$1
  shift
  setsid env -u SLURM_CONF "$@" < /dev/null > "$dir/log/$name.out" 2>&1 &
  echo $! > "$dir/pid.$name"
}

fail_start() {
  log "start failed: $*"
  local f
  for f in "$dir"/log/*; do
    [ -s "$f" ] || continue
    echo "--- $f (last 30 lines)"
    tail -n 30 "$f"
  done
  do_stop
  exit 1
}

do_start() {
  rm -f "$handle.skip"
  if [ -f "$handle" ]; then
    log "a cluster from an earlier run is still recorded in $handle: stopping it"
    do_stop
  fi
  [ "$(id -u)" -eq 0 ] ||
    skip "the Slurm tests need root (slurmd runs the jobs' steps)"
  local b
  for b in munged mungekey slurmctld slurmd srun sbatch salloc sinfo squeue \
           scancel python3 setsid timeout; do
    command -v "$b" > /dev/null 2>&1 ||
      skip "$b not found (scripts/deps.sh installs slurmd slurmctld" \
           "slurm-client munge)"
  done
  dir=$(mktemp -d /tmp/lci-slurm.XXXXXX) || { log "mktemp failed"; exit 1; }
  echo "$dir" > "$handle"
  mkdir -p "$dir/log" "$dir/state" "$dir/spool" "$dir/munge"
  chmod 700 "$dir/munge"

  # munge: its own key and socket; the daemons find the socket through
  # AuthInfo, the clients through the same slurm.conf
  mungekey --create --keyfile="$dir/munge/munge.key" --bits=1024 \
    > "$dir/log/mungekey.out" 2>&1 || fail_start "mungekey"
  chmod 400 "$dir/munge/munge.key"
  local sock=$dir/munge/munge.socket
  start_daemon munged munged --foreground --force --socket="$sock" \
    --key-file="$dir/munge/munge.key" --log-file="$dir/log/munged.log" \
    --pid-file="$dir/munge/munged.pid" --seed-file="$dir/munge/munged.seed"
  local i
  for i in $(seq 1 100); do
    [ -S "$sock" ] && break
    pid_alive "$(cat "$dir/pid.munged")" || fail_start "munged exited"
    sleep 0.1
  done
  [ -S "$sock" ] || fail_start "munged did not create $sock in 10 s"

  local ctld_port slurmd_port host cpus
  ctld_port=$(free_port) || fail_start "no free port"
  slurmd_port=$(free_port) || fail_start "no free port"
  [ "$ctld_port" != "$slurmd_port" ] || slurmd_port=$(free_port)
  host=$(hostname)
  # enough CPUs for the 4-rank tests running next to each other (ctest
  # -j); config_overrides lets the node claim them on any machine
  cpus=16
  cat > "$dir/slurm.conf" <<CONF
# Written by tests/slurm/slurm_fixture.sh: a private one-node cluster.
ClusterName=lcitest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
CommunicationParameters=NoInAddrAny
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
$(grep -v '^#' "$here/common.conf")
TmpFS=$dir
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=1000 State=UNKNOWN
PartitionName=lci Nodes=$host Default=YES MaxTime=10 State=UP
CONF
  cat > "$dir/env" <<ENV
export SLURM_CONF=$dir/slurm.conf
ENV
  export SLURM_CONF=$dir/slurm.conf

  start_daemon slurmctld slurmctld -D -i -f "$dir/slurm.conf"
  start_daemon slurmd slurmd -D -f "$dir/slurm.conf" -N "$host"

  # the node idle: slurmctld up, slurmd registered
  local state=""
  for i in $(seq 1 300); do
    for b in slurmctld slurmd munged; do
      pid_alive "$(cat "$dir/pid.$b")" || fail_start "$b exited"
    done
    state=$(timeout 5 sinfo -h -N -o %T 2>/dev/null | head -n 1)
    [ "$state" = idle ] && break
    sleep 0.2
  done
  [ "$state" = idle ] ||
    fail_start "the node is not idle after 60 s (sinfo: '${state}')"
  log "cluster up in $dir: slurmctld pid $(cat "$dir/pid.slurmctld")," \
      "slurmd pid $(cat "$dir/pid.slurmd"), munged pid" \
      "$(cat "$dir/pid.munged"), ports $ctld_port/$slurmd_port"
  sinfo
}

case "$action" in
  start) do_start ;;
  stop) do_stop ;;
  *) usage ;;
esac
