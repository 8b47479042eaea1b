#!/bin/sh
# The log (LCI_LOG_LEVEL, LCI_LOG_FILE; src/util/log.hpp), tried with a
# 2-rank hello_world under lcrun (ctest: tools.log):
#   - the default level (warn) prints no lci line in a normal run;
#   - info to per-rank files names the bootstrap and the network backend,
#     one file per rank, "%r" replaced by the rank;
#   - debug on the hybrid backend names each peer's path (not in a build
#     without it: third argument "no-hybrid");
#   - a bad level is reported, not ignored.
lcrun=$1
hello=$2
hybrid=${3:-hybrid}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
no() { echo "FAIL: $*"; fail=1; }

out=$(env -u LCI_LOG_LEVEL -u LCI_LOG_FILE "$lcrun" -n 2 --timeout 60 -- "$hello" 2>&1) ||
  no "hello_world failed: $out"
printf '%s\n' "$out" | grep -q '^lci\[' && no "lines at the default level: $out"

LCI_LOG_LEVEL=info LCI_LOG_FILE="$dir/log-%r.txt" \
  "$lcrun" -n 2 --timeout 60 -- "$hello" >/dev/null 2>&1 || no "info run failed"
for r in 0 1; do
  f="$dir/log-$r.txt"
  [ -f "$f" ] || { no "no log file $f"; continue; }
  grep -q "^lci\[$r\] info: bootstrap pmi1: rank $r of 2" "$f" ||
    no "$f names no bootstrap: $(cat "$f")"
  grep -q "^lci\[$r\] info: network backend shm" "$f" ||
    no "$f names no network backend: $(cat "$f")"
done

if [ "$hybrid" = hybrid ]; then
  out=$(LCI_LOG_LEVEL=debug LCI_ATTR_BACKEND=hybrid LCI_ATTR_SHM_NODE_SPLIT=2 \
    "$lcrun" -n 2 --timeout 60 -- "$hello" 2>&1) || no "debug run failed: $out"
  printf '%s\n' "$out" | grep -q '^lci\[0\] debug: hybrid: rank 1 through socket (another node)' ||
    no "no per-peer path at debug: $out"
  printf '%s\n' "$out" | grep -q '^lci\[0\] debug: hybrid: rank 0 through native shm' ||
    no "no own path at debug: $out"
else
  echo "the hybrid path check skipped: this build has no hybrid backend"
fi

out=$(LCI_LOG_LEVEL=loud "$lcrun" -n 1 --timeout 60 -- "$hello" 2>&1)
printf '%s\n' "$out" | grep -q "LCI_LOG_LEVEL='loud' is not one of" ||
  no "a bad level is not reported: $out"

[ "$fail" = 0 ] && echo "log checks passed"
exit "$fail"
