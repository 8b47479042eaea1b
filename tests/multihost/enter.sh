#!/bin/sh
# enter.sh [SSH OPTIONS] HOST COMMAND...: runs COMMAND inside HOST, one of
# the hosts tests/multihost/hosts.sh made (LCI_MULTIHOST_DIR names their
# state; DIR/enter, which hosts.sh writes, sets it). It stands in for ssh
# as the remote shell of the launchers:
#   mpiexec.hydra -launcher ssh -launcher-exec DIR/enter -hosts node0,node1
#   mpirun --mca plm_rsh_agent DIR/enter --hostfile DIR/hostfile
# Like ssh it ignores its own options (-x, -q, -T, -o X, -p X, ...), joins
# the words of COMMAND with spaces and has a shell run the result (the
# launchers quote for a remote shell), in HOST's network, UTS and mount
# namespaces, with a fresh login-like environment (PATH, HOME, USER,
# LOGNAME, SHELL, LANG, TMPDIR, LD_LIBRARY_PATH and LCI_MULTIHOST_DIR are
# kept): what the launcher does not pass on explicitly does not reach the
# ranks, as over ssh.
set -u
dir=${LCI_MULTIHOST_DIR:?enter.sh: LCI_MULTIHOST_DIR is not set (use DIR/enter)}
while [ $# -gt 0 ]; do
  case $1 in
    -[bcDEeFIiJLlmOoPpQRSWw]) shift 2 ;;  # options with an argument
    -*) shift ;;
    *) break ;;
  esac
done
[ $# -ge 2 ] || { echo "usage: enter.sh [SSH OPTIONS] HOST COMMAND..." >&2; exit 255; }
host=$1
shift
pidf=$dir/$host.pid
[ -f "$pidf" ] || { echo "enter.sh: no host $host in $dir" >&2; exit 255; }
pid=$(cat "$pidf")
tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "^lci-multihost-holder $dir $host " ||
  { echo "enter.sh: host $host of $dir is gone" >&2; exit 255; }
exec nsenter -t "$pid" -n -u -m -- env -i \
  PATH="${PATH:-/usr/local/bin:/usr/bin:/bin}" HOME="${HOME:-/root}" \
  USER="${USER:-root}" LOGNAME="${LOGNAME:-root}" SHELL=/bin/sh \
  LANG="${LANG:-C.UTF-8}" TMPDIR="${TMPDIR:-/tmp}" \
  LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" LCI_MULTIHOST_DIR="$dir" \
  sh -c "$*"
