#!/bin/sh
# Usage: expect_output.sh REGEX1 REGEX2 COMMAND [ARGS...]
# Passes when COMMAND exits 0 and its output (stdout and stderr, kept in a
# temporary file and printed) has a line matching each extended regular
# expression.
log=$(mktemp) || exit 1
trap 'rm -f "$log"' EXIT
r1=$1
r2=$2
shift 2
"$@" >"$log" 2>&1
status=$?
cat "$log"
echo "expect_output: exit status $status: $*"
[ "$status" -eq 0 ] || { echo "FAIL: the command failed"; exit 1; }
for r in "$r1" "$r2"; do
  grep -Eq "$r" "$log" || { echo "FAIL: no line matches: $r"; exit 1; }
done
exit 0
