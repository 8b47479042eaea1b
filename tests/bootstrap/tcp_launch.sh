#!/bin/sh
# Usage: tcp_launch.sh N PREFIX PATTERN PROGRAM [ARGS...]
# Starts N copies of PROGRAM the way upstream LCI 2's tcp bootstrap and
# torchrun start ranks: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE and a
# rendezvous address 127.0.0.1:PORT (a free port) in PREFIX_MASTER_ADDR and
# PREFIX_MASTER_PORT (PREFIX LCT or LCI; "none": MASTER_ADDR/MASTER_PORT).
# LCT_PMI_BACKEND is passed on as the caller set it. Passes when every rank
# exits 0 within 60 s and, unless PATTERN is "-", prints PATTERN with @R@
# and @N@ replaced by its rank and N. Each rank's output is shown.
n=$1
prefix=$2
pattern=$3
shift 3
port=$(python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')
[ -n "$port" ] || { echo "tcp_launch: no free port"; exit 1; }
case $prefix in
  none) addr_var=MASTER_ADDR port_var=MASTER_PORT ;;
  *) addr_var=${prefix}_MASTER_ADDR port_var=${prefix}_MASTER_PORT ;;
esac
dir=$(mktemp -d "${TMPDIR:-/tmp}/lci-tcp-launch.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
pids=""
r=0
while [ "$r" -lt "$n" ]; do
  env RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r LOCAL_WORLD_SIZE=$n \
    "$addr_var=127.0.0.1" "$port_var=$port" \
    timeout -k 5 60 "$@" >"$dir/out.$r" 2>&1 &
  pids="$pids $!"
  r=$((r + 1))
done
status=0
r=0
for pid in $pids; do
  wait "$pid" || { echo "tcp_launch: rank $r exited with status $?"; status=1; }
  r=$((r + 1))
done
r=0
while [ "$r" -lt "$n" ]; do
  echo "--- rank $r ($addr_var=127.0.0.1 $port_var=$port)"
  cat "$dir/out.$r"
  if [ "$pattern" != - ]; then
    want=$(echo "$pattern" | sed "s/@R@/$r/g; s/@N@/$n/g")
    grep -q -- "$want" "$dir/out.$r" || { echo "tcp_launch: rank $r did not print '$want'"; status=1; }
  fi
  r=$((r + 1))
done
exit $status
