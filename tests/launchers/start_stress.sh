#!/bin/sh
# Start-up stress: runs the same launcher test COUNT times back to back
# (run.sh, same arguments) and fails at the first run that fails, so that a
# start-up race that hits one start in several is caught. Each run has
# run.sh's own time bound; the whole test has ctest's.
#
# Usage: start_stress.sh COUNT LAUNCHER NRANKS [run.sh checks...] -- PROGRAM...
# Exits 0 when every run passed, 1 at the first failure, 77 when run.sh
# skips (launcher not installed).
count=$1
launcher=$2
nranks=$3
shift 3
here=$(dirname "$0")
i=1
while [ "$i" -le "$count" ]; do
  output=$(sh "$here/run.sh" "$launcher" "$nranks" 60 "$@" 2>&1)
  status=$?
  if [ "$status" -eq 77 ]; then
    printf '%s\n' "$output"
    exit 77
  fi
  if [ "$status" -ne 0 ]; then
    printf '%s\n' "$output"
    echo "start_stress: FAIL: start $i of $count failed (status $status)"
    exit 1
  fi
  i=$((i + 1))
done
echo "start_stress: $count of $count starts of $nranks ranks under $launcher passed"
exit 0
