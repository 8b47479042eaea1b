#!/bin/sh
# lci_info --check with an unusable /dev/shm (ctest: tools.lci_info_bad_shm):
# in a private mount namespace a read-only tmpfs hides /dev/shm; the check
# must fail with status 1 and name /dev/shm and the fix. Skips (77) where
# a mount namespace cannot be made (not root).
info=$1
unshare -m --propagation private true 2>/dev/null ||
  { echo "SKIP: cannot make a mount namespace (not root?)"; exit 77; }
out=$(unshare -m --propagation private sh -c \
  'mount -t tmpfs -o ro,size=1m tmpfs /dev/shm && exec "$0" --check' \
  "$info" 2>&1)
status=$?
printf '%s\n' "$out"
[ "$status" -eq 1 ] || { echo "FAIL: exit status $status, expected 1"; exit 1; }
printf '%s\n' "$out" | grep -q '^problem: /dev/shm is not usable.*mount -t tmpfs' ||
  { echo "FAIL: no /dev/shm problem with its fix"; exit 1; }
echo "ok: /dev/shm problem reported"
