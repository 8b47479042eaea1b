#!/usr/bin/env bash
# The demo: installs missing Debian packages, builds the release preset and
# runs the hello_world example as two processes through the lcrun launcher.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/deps.sh
echo "demo.sh: + cmake --preset release"
cmake --preset release
echo "demo.sh: + cmake --build --preset release"
cmake --build --preset release
echo "demo.sh: + build/release/tools/lcrun/lcrun -n 2 build/release/examples/hello_world"
build/release/tools/lcrun/lcrun -n 2 build/release/examples/hello_world
