#!/bin/sh
# launcher.lcrun_tty_stdin: lcrun started from a terminal (a pseudo-terminal
# made by script(1)) hands rank 0 the line typed there, and each rank leads
# its own session (as hydra's ranks do). A rank in a process group of the
# terminal's session that is not the foreground one would be stopped by
# SIGTTIN when it reads, and the job would hang until lcrun's timeout.
#
# Usage: tty_stdin.sh LCRUN
lcrun=$1
if ! command -v script >/dev/null 2>&1; then
  echo "SKIP: script(1) is not installed (Debian package bsdutils)"
  exit 77
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# The rank reads one line, then says whether it leads its own session
# (field 6 of /proc/self/stat is the session id; the shell is the rank
# itself, lcrun execs it).
rank_cmd='read line; echo "rank read: $line";
  set -- $(cat /proc/$$/stat);
  if [ "$6" = "$$" ]; then echo "rank leads its session"; fi'
# script's input stays open for a while so that the line is typed into a
# live terminal; the outer timeout bounds the whole run.
( printf 'typed into the terminal\n'; sleep 5 ) |
  timeout 60 script -qec "$lcrun -n 2 --timeout 30 sh -c '$rank_cmd'" /dev/null \
  >"$out" 2>&1
rc=$?
cat "$out"
fail=0
if ! grep -q "rank read: typed into the terminal" "$out"; then
  echo "FAIL: rank 0 did not read the line typed into lcrun's terminal"
  fail=1
fi
leaders=$(grep -c "rank leads its session" "$out")
if [ "$leaders" -ne 2 ]; then
  echo "FAIL: $leaders of 2 ranks lead their own session"
  fail=1
fi
if [ "$rc" -ne 0 ]; then
  echo "FAIL: the job exited with status $rc"
  fail=1
fi
[ "$fail" -eq 0 ] && echo "PASS"
exit "$fail"
