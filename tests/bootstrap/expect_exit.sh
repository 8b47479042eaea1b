#!/bin/sh
# Usage: expect_exit.sh EXPECTED MAX_SECONDS COMMAND [ARGS...]
# Runs COMMAND and passes (exit 0) when it exits with status EXPECTED (a
# number, or "nonzero") within MAX_SECONDS seconds.
expected=$1
max_seconds=$2
shift 2
start=$(date +%s)
"$@"
status=$?
elapsed=$(($(date +%s) - start))
echo "expect_exit: exit status $status after ${elapsed}s" \
  "(expected $expected within ${max_seconds}s): $*"
if [ "$expected" = nonzero ]; then
  [ "$status" -ne 0 ] || exit 1
else
  [ "$status" -eq "$expected" ] || exit 1
fi
[ "$elapsed" -le "$max_seconds" ] || exit 1
exit 0
