#!/bin/sh
# Usage: check_configure.sh SOURCE_DIR WORK_DIR
# Configures LCI with libfabric hidden from pkg-config (PKG_CONFIG_LIBDIR
# pointing at an empty directory): LCI_WITH_OFI=AUTO must succeed without
# the ofi backend and say so; LCI_WITH_OFI=ON must fail naming libfabric.
src=$1
work=$2
rm -rf "$work"
mkdir -p "$work/empty"
export PKG_CONFIG_LIBDIR="$work/empty" PKG_CONFIG_PATH=
fail=0
common="-DLCI_BUILD_TESTS=OFF -DLCI_BUILD_EXAMPLES=OFF
        -DLCI_BUILD_BENCHMARKS=OFF -DLCI_BUILD_APPS=OFF"
# shellcheck disable=SC2086
out=$(cmake -S "$src" -B "$work/auto" $common 2>&1)
if [ $? -ne 0 ]; then
  echo "FAIL: configure with libfabric hidden (AUTO) failed:"
  echo "$out"
  fail=1
elif ! echo "$out" | grep -q "ofi network backend: OFF (LCI_WITH_OFI=AUTO and pkg-config found no libfabric)"; then
  echo "FAIL: configure did not report the ofi backend left out:"
  echo "$out"
  fail=1
else
  echo "ok: LCI_WITH_OFI=AUTO without libfabric configures, native shm only"
fi
# shellcheck disable=SC2086
out=$(cmake -S "$src" -B "$work/on" -DLCI_WITH_OFI=ON $common 2>&1)
if [ $? -eq 0 ]; then
  echo "FAIL: LCI_WITH_OFI=ON configured without libfabric"
  fail=1
elif ! echo "$out" | grep -q "libfabric"; then
  echo "FAIL: LCI_WITH_OFI=ON failed without naming libfabric:"
  echo "$out"
  fail=1
else
  echo "ok: LCI_WITH_OFI=ON without libfabric fails, naming it"
fi
rm -rf "$work"
exit $fail
