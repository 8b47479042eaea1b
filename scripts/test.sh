#!/usr/bin/env bash
# Builds LCI and runs its test suite with a CMake preset (CMakePresets.json):
#   scripts/test.sh [debug|release|asan|tsan]     (default: debug)
# Installs missing Debian packages first (scripts/deps.sh). Exits with ctest's
# status. Extra arguments after the preset go to ctest (e.g. -R install).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

preset="${1:-debug}"
shift || true

bash scripts/deps.sh
echo "test.sh: + cmake --preset $preset"
cmake --preset "$preset"
echo "test.sh: + cmake --build --preset $preset"
cmake --build --preset "$preset"
echo "test.sh: + ctest --preset $preset $*"
status=0
ctest --preset "$preset" "$@" || status=$?
echo "test.sh: ctest --preset $preset exited with status $status"
exit "$status"
