#!/bin/sh
# host_failure.sh DIR HOSTS PPN MODE PROGRAM: a host fails under
# mpiexec.hydra (-disable-auto-cleanup: the launcher does not end the job
# when ranks die). PROGRAM (mh_host_failure) runs as HOSTS x PPN ranks on
# node0 .. of DIR (tests/multihost/hosts.sh); once every rank is ready the
# last host, node<HOSTS-1>, fails:
#   kill  every rank on it is killed (SIGKILL)
#   link  its link is taken down (its port of the bridge, in head)
# Passes when every rank still alive reported exactly the ranks it lost,
# by rank, and exited within 30 s of the fault; afterwards nothing is left
# (no process in the hosts, no /dev/shm/lci-shm-<pid>-* of a rank).
set -u
dir=$1 hosts=$2 ppn=$3 mode=$4 prog=$5
here=$(cd "$(dirname "$0")" && pwd)
command -v mpiexec.hydra >/dev/null || { echo "host_failure.sh: no mpiexec.hydra"; exit 77; }
[ -x "$dir/enter" ] || { echo "host_failure.sh: no hosts in $dir"; exit 1; }
n=$((hosts * ppn))
victim=$((hosts - 1))
out=$(mktemp -d /tmp/lci-host-failure.XXXXXX)
hostfile=$out/hostfile
i=0
while [ $i -lt "$hosts" ]; do echo "node$i:$ppn" >>"$hostfile"; i=$((i + 1)); done
status=0
fail() { echo "host_failure.sh: FAILED: $*"; status=1; }
head_pid=$(cat "$dir/head.pid")

unset FI_TCP_IFACE FI_SOCKETS_IFACE
# heartbeats find the host that failed (hydra passes the variable on)
LCI_ATTR_PEER_TIMEOUT=${LCI_ATTR_PEER_TIMEOUT:-10000}
export LCI_ATTR_PEER_TIMEOUT
timeout -s KILL 120 nsenter -t "$head_pid" -n -u -m -- \
  mpiexec.hydra -disable-auto-cleanup -launcher ssh -launcher-exec "$dir/enter" \
  -f "$hostfile" -n "$n" "$prog" --ppn "$ppn" --victim "$victim" \
  --mode "$mode" --out "$out" >"$out/log" 2>&1 &
launcher=$!

# every rank ready
i=0
while [ "$(ls "$out" | grep -c '^ready\.[0-9]*$')" -lt "$n" ]; do
  i=$((i + 1))
  if [ $i -gt 600 ] || ! kill -0 $launcher 2>/dev/null; then
    fail "not every rank got ready"
    break
  fi
  sleep 0.1
done
pids=$(cat "$out"/ready.* 2>/dev/null | cut -d' ' -f1)
if [ $status -eq 0 ]; then
  t0=$(date +%s%N)
  if [ "$mode" = kill ]; then
    r=$((victim * ppn))
    while [ $r -lt $(((victim + 1) * ppn)) ]; do
      kill -KILL "$(cut -d' ' -f1 "$out/ready.$r")"
      r=$((r + 1))
    done
    survivors=$(seq 0 $((victim * ppn - 1)))
    echo "host_failure.sh: killed the ranks of node$victim"
  else
    nsenter -t "$head_pid" -n ip link set "vh$victim" down
    survivors=$(seq 0 $((n - 1)))
    echo "host_failure.sh: took the link of node$victim down"
  fi
  # every survivor's result, within 30 s of the fault (45 s: then it is
  # a failure)
  i=0
  while :; do
    missing=""
    for r in $survivors; do [ -f "$out/result.$r" ] || missing="$missing $r"; done
    [ -z "$missing" ] && break
    i=$((i + 1))
    [ $i -gt 450 ] && { fail "no result from ranks$missing after 45 s"; break; }
    sleep 0.1
  done
  for r in $survivors; do
    [ -f "$out/result.$r" ] || continue
    line=$(cat "$out/result.$r")
    echo "host_failure.sh: rank $r: $line"
    # the ranks it must have lost
    want=""
    h=$((r / ppn))
    q=0
    while [ $q -lt "$n" ]; do
      qh=$((q / ppn))
      if { [ $h -eq $victim ] && [ $qh -ne $victim ]; } ||
         { [ $h -ne $victim ] && [ $qh -eq $victim ]; }; then
        want="$want${want:+,}$q"
      fi
      q=$((q + 1))
    done
    echo "$line" | grep -q "^failed=$want " || fail "rank $r reported $line, expected failed=$want"
    echo "$line" | grep -q " failures=0$" || fail "rank $r: check failures"
    done_ns=$(echo "$line" | sed 's/.*done_ns=\([0-9]*\).*/\1/')
    ms=$(( (done_ns - t0) / 1000000 ))
    echo "host_failure.sh: rank $r finished $ms ms after the fault"
    [ $ms -le 30000 ] || fail "rank $r took $ms ms (more than 30 s)"
  done
  # the survivors' processes are gone (exited, not just done writing)
  for r in $survivors; do
    p=$(cut -d' ' -f1 "$out/ready.$r")
    i=0
    while [ -d "/proc/$p" ] && [ "$(cut -d' ' -f3 /proc/$p/stat 2>/dev/null)" != Z ]; do
      i=$((i + 1))
      [ $i -gt 50 ] && { fail "rank $r (pid $p) did not exit"; break; }
      sleep 0.1
    done
  done
fi
# the launcher waits for the lost host forever (link) or reports the
# killed ranks: end it, then everything left in the hosts
kill -KILL $launcher 2>/dev/null
wait $launcher 2>/dev/null
[ "$mode" = link ] && nsenter -t "$head_pid" -n ip link set "vh$victim" up
left=$(sh "$here/hosts.sh" clean "$dir")
[ -n "$left" ] && echo "host_failure.sh: ended what the launcher left in the hosts: $left"
for p in $pids; do
  for f in /dev/shm/lci-shm-"$p"-*; do
    [ -e "$f" ] || continue
    fail "$f is left behind"
    rm -f "$f"
  done
done
echo "--- launcher output"
cat "$out/log"
rm -rf "$out"
[ $status -eq 0 ] && echo "host_failure.sh: passed"
exit $status
