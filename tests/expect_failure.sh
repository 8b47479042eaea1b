#!/bin/sh
# Usage: expect_failure.sh REGEX COMMAND [ARGS...]
# Passes when COMMAND exits non-zero and its output (stdout and stderr)
# matches the extended regular expression REGEX.
regex=$1
shift
out=$("$@" 2>&1)
status=$?
printf '%s\n' "$out"
echo "expect_failure: exit status $status: $*"
if [ "$status" -eq 0 ]; then
  echo "FAIL: the command succeeded"
  exit 1
fi
if ! printf '%s\n' "$out" | grep -Eq "$regex"; then
  echo "FAIL: no line matches: $regex"
  exit 1
fi
exit 0
