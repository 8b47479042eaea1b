#!/bin/sh
# Usage: coll_failure.sh LCRUN N PROGRAM [ARGS...]
# Runs PROGRAM (mp_coll_failure, mp_quiet_failure) on N ranks under lcrun
# --keep-going; one rank kills itself with SIGKILL (mp_coll_failure: the
# last one, during a collective). Passes when lcrun exits 137 (the
# victim's status) and every survivor printed "failures=0".
lcrun=$1
n=$2
shift 2
out=$("$lcrun" -n "$n" --keep-going --timeout 60 -- "$@" 2>&1)
status=$?
echo "$out"
echo "coll_failure.sh: lcrun exit status $status"
[ "$status" -eq 137 ] || { echo "expected 137 (the victim's SIGKILL)"; exit 1; }
ok=$(echo "$out" | grep -c "failures=0$")
[ "$ok" -eq $((n - 1)) ] || { echo "$ok of $((n - 1)) survivors passed"; exit 1; }
exit 0
