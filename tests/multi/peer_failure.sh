#!/bin/sh
# Usage: peer_failure.sh LCRUN N PROGRAM [ARGS...]
# Runs PROGRAM on N ranks under lcrun --keep-going; the last rank kills
# itself with SIGKILL. Passes when lcrun exits 137 (the victim's status),
# names the victim and SIGKILL, every survivor printed "failures=0", and
# every operation a survivor lists as "must-fail <kind>: <error>" (at least
# 4 kinds each) completed with fatal_peer_failure, never done.
lcrun=$1
n=$2
shift 2
victim=$((n - 1))
out=$("$lcrun" -n "$n" --keep-going --timeout 60 -- "$@" 2>&1)
status=$?
echo "$out"
echo "peer_failure.sh: lcrun exit status $status"
[ "$status" -eq 137 ] || { echo "expected 137 (the victim's SIGKILL)"; exit 1; }
echo "$out" | grep -Eq "^lcrun: rank $victim \(pid [0-9]+\) died: killed by signal 9 \(SIGKILL" ||
  { echo "lcrun did not name rank $victim and SIGKILL"; exit 1; }
must=$(echo "$out" | grep -c "must-fail .*: ")
failed=$(echo "$out" | grep -c "must-fail .*: fatal_peer_failure$")
[ "$must" -ge $((4 * (n - 1))) ] ||
  { echo "only $must must-fail operations reported"; exit 1; }
[ "$failed" -eq "$must" ] ||
  { echo "$((must - failed)) of $must must-fail operations did not fail"; exit 1; }
ok=$(echo "$out" | grep -c "failures=0$")
[ "$ok" -eq $((n - 1)) ] || { echo "$ok of $((n - 1)) survivors passed"; exit 1; }
exit 0
