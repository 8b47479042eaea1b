#!/bin/sh
# Usage: expect_rows.sh MIN_ROWS PATTERN COMMAND [ARGS...]
# Smoke check of a benchmark (never of its speed): passes when COMMAND exits
# 0, prints no "# error" line, and prints at least MIN_ROWS lines matching
# the extended regular expression PATTERN. Exits 77 (ctest: skipped) when
# COMMAND cannot be found.
min_rows=$1
pattern=$2
shift 2
if ! command -v "$1" >/dev/null 2>&1; then
  echo "expect_rows: skipped: $1 not found"
  exit 77
fi
out=$("$@")
status=$?
printf '%s\n' "$out"
rows=$(printf '%s\n' "$out" | grep -cE "$pattern")
echo "expect_rows: exit status $status, $rows row(s) matching '$pattern'" \
  "(expected 0 and at least $min_rows): $*"
[ "$status" -eq 0 ] || exit 1
if printf '%s\n' "$out" | grep -q '^# error'; then exit 1; fi
[ "$rows" -ge "$min_rows" ] || exit 1
exit 0
