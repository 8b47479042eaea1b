#!/bin/sh
# Usage: expect_output.sh REGEX1 REGEX2 COMMAND [ARGS...]
# Passes when COMMAND exits 0 and its output (stdout and stderr) has a line
# matching each extended regular expression.
r1=$1
r2=$2
shift 2
out=$("$@" 2>&1)
status=$?
printf '%s\n' "$out"
echo "expect_output: exit status $status: $*"
if [ "$status" -ne 0 ]; then
  echo "FAIL: the command failed"
  exit 1
fi
for r in "$r1" "$r2"; do
  if ! printf '%s\n' "$out" | grep -Eq "$r"; then
    echo "FAIL: no line matches: $r"
    exit 1
  fi
done
exit 0
