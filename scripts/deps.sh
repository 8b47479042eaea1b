#!/usr/bin/env bash
# Installs the Debian packages LCI needs to build and test, if missing
# (scripts/deps.sh [--bench] [--fuzz] [--upstream]).
# Idempotent: checks each package with dpkg -s and runs apt-get (update, then
# install) only when something is missing. Runs as root; as another user it
# uses sudo when that exists.
set -euo pipefail

# iproute2: ip(8), for tools/lo-netns (MPI launchers in a private
# loopback-only network namespace)
# libibverbs-dev: the ibv backend builds against it (no RDMA device needed)
packages=(cmake ninja-build g++ pkg-config libfabric-dev libfabric-bin iproute2
          libibverbs-dev
          libgtest-dev googletest python3
          # launcher tests (tests/launchers): MPICH's mpiexec.hydra (PMI-1,
          # PMI-2) and mpicxx.mpich (MPI-bootstrapped build), Open MPI's
          # mpirun (PMIx), libpmix for the PMIx bootstrap backend
          mpich libmpich-dev openmpi-bin libopenmpi-dev libpmix-dev
          # apps/kmer: zlib for gzipped reads; velvet's test reads (about
          # 4 Mbp) are the input of its tests
          zlib1g-dev velvet-tests
          # Slurm tests (tests/slurm): a private one-node cluster; Debian's
          # slurmd has the pmi2 and pmix (libpmix2) MPI plugins
          slurmd slurmctld slurm-client munge)
# readelf(1) (binutils): the noofi stage checks that liblci needs no
# libfabric (tests/noofi/check_needed.sh)
packages+=(binutils)
# the hosts of tests/multihost (network namespaces): ip(8) and bridge(8)
# from iproute2 (above), unshare, nsenter and setsid from util-linux
packages+=(util-linux)
# faults on the hosts' links (tests/multihost/lossy.sh): nft(8) drop rules;
# tc(8) (iproute2) for a narrow link
packages+=(nftables)
# --bench: also matplotlib for the comparison plots (docs/BENCHMARKING.md)
#   and kmer --plot, and seqprep's reads (about 20 Mbp, 16 MB) for the
#   k-mer counting benchmark (apps/kmer/bench.sh)
# --fuzz: also clang and its libFuzzer runtime for the opt-in libFuzzer
#   build (cmake --preset fuzz; docs/RELIABILITY.md, "Fuzzing")
# --upstream: also cxxopts and OpenMP, which upstream LCI 2's client files
#   need (scripts/upstream_clients.sh)
for arg in "$@"; do
  case "$arg" in
    --bench) packages+=(python3-matplotlib seqprep-data) ;;
    --fuzz) packages+=(clang libclang-rt-14-dev) ;;
    --upstream) packages+=(libcxxopts-dev libomp-dev) ;;
    *) echo "deps.sh: unknown option $arg (--bench, --fuzz, --upstream)" >&2
       exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  if dpkg -s "$p" 2>/dev/null | grep -q '^Status: install ok installed$'; then
    :
  else
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "deps.sh: all packages present: ${packages[*]}"
  exit 0
fi

as_root=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)
  else
    echo "deps.sh: missing ${missing[*]}; run as root to install them" >&2
    exit 1
  fi
fi

export DEBIAN_FRONTEND=noninteractive
echo "deps.sh: missing ${missing[*]}"
echo "deps.sh: + apt-get update"
"${as_root[@]}" apt-get update
echo "deps.sh: + apt-get install -y --no-install-recommends ${missing[*]}"
"${as_root[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
echo "deps.sh: installed ${missing[*]}"
