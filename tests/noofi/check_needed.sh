#!/bin/sh
# Usage: check_needed.sh FILE...
# Passes when no FILE (a shared library or program) names libfabric among
# the libraries it needs (readelf -d, NEEDED); exits 77 (skip) without
# readelf, or for a static liblci (nothing to check there).
command -v readelf >/dev/null 2>&1 || { echo "no readelf: skipped"; exit 77; }
status=0
for f in "$@"; do
  case "$f" in
    *.a) echo "$f: static, skipped"; continue ;;
  esac
  needed=$(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  if [ -z "$needed" ]; then
    echo "FAIL: readelf found no NEEDED entries in $f"
    status=1
  elif echo "$needed" | grep -q fabric; then
    echo "FAIL: $f needs libfabric:"
    echo "$needed"
    status=1
  else
    echo "ok: $f needs" $needed
  fi
done
exit $status
