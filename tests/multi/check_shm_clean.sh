#!/bin/sh
# Fails when /dev/shm holds a native shm backend segment ("lci-shm-<pid>-*")
# whose owner process is gone: a leak (a segment is unlinked once every peer
# has mapped it, or when its device is freed; lcrun removes the segments of
# ranks killed by a signal). Segments of live processes belong to jobs still
# running (another build's tests) and are left alone. Leaked files are
# listed and removed, so that one failure does not fail later runs.
# An argument names another prefix (the ibv backend's fake verbs layer:
# lci-fakeibv, "lci-fakeibv-<pid>-<n>").
prefix=${1:-lci-shm}
leaks=0
for f in /dev/shm/"$prefix"-*; do
  [ -e "$f" ] || continue
  pid=$(basename "$f" | cut -d- -f3)
  if [ -n "$pid" ] && [ -d "/proc/$pid" ]; then continue; fi
  echo "leaked $prefix segment: $f (owner pid $pid is gone)"
  rm -f "$f"
  leaks=$((leaks + 1))
done
echo "$leaks leaked $prefix segment(s)"
[ "$leaks" -eq 0 ]
