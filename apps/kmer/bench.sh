#!/bin/sh
# Time to solution of the k-mer counting, LCI against the MPI reference
# (the targets of apps/kmer/README.md, "Benchmark"): the seqprep reads
# (Debian seqprep-data, 2 x 100,000 reads of 101 bases), k = 31 and 51,
# aggregation 1, 8 and 64 KiB; ours with 2 processes x 1 thread and with 1
# process x 2 threads, the MPI reference with 2 processes. Every point is
# run REPS times, the configurations alternated within each repetition
# (their order rotating), and the medians and the ratios to MPI printed.
# Every run's histogram must equal the others' of its k.
#
#   apps/kmer/bench.sh [--build DIR] [--reps N] [--out DIR] [--mpi NAME]
#                      [--base DIR] [--configs LIST] [--ks LIST]
#                      [--aggs LIST] [--hosts] [--smoke]
#     --build DIR  build tree (default build/release, else build/debug)
#     --base DIR   another build tree (say, of the main branch) whose kmer
#                  runs too, alternated with the rest, as base_2x1 and
#                  base_1x2: an A/B of a change against the same MPI runs
#     --configs L  the configurations to run, among lci_2x1, lci_1x2,
#                  base_2x1, base_1x2 and mpi_2 (default: all those built;
#                  the MPI reference always runs, last, for the ratios)
#     --ks L       k values (default "31 51")
#     --aggs L     aggregation sizes (default "1K 8K 64K")
#     --reps N     repetitions (default 5)
#     --out DIR    CSV, histograms and the summary (default
#                  /tmp/kmer-bench.<pid>)
#     --mpi NAME   MPI library of the reference: mpich (default, launched
#                  with mpiexec.hydra) or openmpi (mpirun)
#     --hosts      across two hosts (network namespaces built by
#                  tests/multihost/hosts.sh, removed on exit; needs root):
#                  ours with 1 rank x 1 thread and 1 rank x 2 threads on
#                  each of node0 and node1 under hydra, the MPI reference
#                  (MPICH over UCX's tcp) with 1 rank on each
#     --smoke      one small point, once (velvet's read1, k = 31, 8 KiB):
#                  checks that the script works, measures nothing
# Besides the CSV and the summary, OUT/kmer.png plots the medians (with
# /usr/bin/python3's matplotlib; skipped without it).
# Run it on a quiet machine: other load makes the numbers meaningless.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=""
reps=5
out=/tmp/kmer-bench.$$
mpi=mpich
smoke=0
hosts=0
base=""
configs=""
ks="31 51"
aggs="1K 8K 64K"
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --mpi) mpi=$2; shift 2 ;;
    --smoke) smoke=1; shift ;;
    --hosts) hosts=1; shift ;;
    --base) base=$2; shift 2 ;;
    --configs) configs=$2; shift 2 ;;
    --ks) ks=$2; shift 2 ;;
    --aggs) aggs=$2; shift 2 ;;
    *) echo "bench.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
if [ -z "$build" ]; then
  build=$root/build/release
  [ -x "$build/apps/kmer/kmer" ] || build=$root/build/debug
fi
build=$(cd "$build" && pwd)  # the hosts' remote shells start elsewhere
kmer=$build/apps/kmer/kmer
kmer_mpi=$build/apps/kmer/kmer_mpi_$mpi
lcrun=$build/tools/lcrun/lcrun
kmer_base=""
if [ -n "$base" ]; then
  [ "$hosts" = 0 ] || { echo "bench.sh: --base runs on one host" >&2; exit 2; }
  [ -d "$base" ] || { echo "bench.sh: --base $base: no such directory" >&2; exit 2; }
  kmer_base=$(cd "$base" && pwd)/apps/kmer/kmer
fi
for f in "$kmer" "$kmer_mpi" "$lcrun" $kmer_base; do
  [ -x "$f" ] || { echo "bench.sh: $f is not built" >&2; exit 1; }
done
if [ "$hosts" = 1 ]; then
  [ "$mpi" = mpich ] || { echo "bench.sh: --hosts runs MPICH only" >&2; exit 2; }
  hdir=$(mktemp -d /tmp/kmer-hosts.XXXXXX)
  trap 'sh "$root/tests/multihost/hosts.sh" down "$hdir" >/dev/null' EXIT
  trap 'exit 130' INT TERM HUP
  sh "$root/tests/multihost/hosts.sh" up 2 "$hdir" >/dev/null || exit 1
  # one rank on each host, launched from the host "head"; the library
  # finds the hosts' interface itself, UCX is told (the hosts' decoy
  # interfaces, hosts.sh, send it to a subnet that reaches nobody)
  hydra="nsenter -t $(cat "$hdir/head.pid") -n -u -m -- /usr/bin/mpiexec.hydra -launcher ssh -launcher-exec $hdir/enter -hosts node0,node1 -n 2"
  unset FI_TCP_IFACE FI_SOCKETS_IFACE
fi
case $mpi in
  mpich) mpirun="$root/tools/lo-netns /usr/bin/mpiexec.hydra -launcher fork -iface lo" ;;
  openmpi)
    root_flag=""
    [ "$(id -u)" = 0 ] && root_flag=--allow-run-as-root
    mpirun="$root/tools/lo-netns /usr/bin/mpirun.openmpi $root_flag --oversubscribe --bind-to none --mca oob_tcp_if_include lo"
    ;;
  *) echo "bench.sh: --mpi mpich or openmpi" >&2; exit 2 ;;
esac

if [ "$smoke" = 1 ]; then
  inputs=/usr/share/doc/velvet/tests/read1.fq.gz
  ks=31 aggs=8K reps=1
else
  data=/usr/share/doc/seqprep/examples/data
  inputs="$data/multiplex_bad_contam_1.fq.gz $data/multiplex_bad_contam_2.fq.gz"
fi
for f in $inputs; do
  [ -f "$f" ] || {
    echo "bench.sh: $f is missing (scripts/deps.sh --bench installs it)" >&2
    exit 1
  }
done
mkdir -p "$out"
csv=$out/kmer.csv
echo "k,agg,config,rep,total,read,bloom,count,histo" > "$csv"

# run CONFIG K AGG REP: one run, one CSV row
run() {
  config=$1 k=$2 agg=$3 rep=$4
  histo=$out/$config.k$k.a$agg.r$rep.histo
  case $config in
    lci_2x1) set -- "$lcrun" -n 2 --timeout 900 "$kmer" -t 1 ;;
    lci_1x2) set -- "$lcrun" -n 1 --timeout 900 "$kmer" -t 2 ;;
    base_2x1) set -- "$lcrun" -n 2 --timeout 900 "$kmer_base" -t 1 ;;
    base_1x2) set -- "$lcrun" -n 1 --timeout 900 "$kmer_base" -t 2 ;;
    mpi_2) set -- $mpirun -n 2 "$kmer_mpi" ;;
    lci_hosts_1t) set -- $hydra "$kmer" -t 1 ;;
    lci_hosts_2t) set -- $hydra "$kmer" -t 2 ;;
    mpi_hosts) set -- env UCX_TLS=tcp,self UCX_NET_DEVICES=eth0 $hydra "$kmer_mpi" ;;
  esac
  log=$out/$config.k$k.a$agg.r$rep.log
  if ! "$@" -k "$k" --agg "$agg" --progress 0 --histo "$histo" $inputs \
      > "$log" 2>&1; then
    echo "bench.sh: FAILED: $* (log: $log)" >&2
    cat "$log" >&2
    exit 1
  fi
  ref=$out/k$k.histo
  if [ -f "$ref" ]; then
    cmp -s "$ref" "$histo" ||
      { echo "bench.sh: $histo differs from $ref" >&2; exit 1; }
    rm -f "$histo"
  else
    mv "$histo" "$ref"
  fi
  awk -v pre="$k,$agg,$config,$rep" '
    $1 == "#" && $2 == "time" { t[$3] = $4 }
    END { printf "%s,%s,%s,%s,%s,%s\n", pre, t["total"], t["read"],
          t["bloom"], t["count"], t["histo"] }' "$log" >> "$csv"
  tail -n 1 "$csv"
}

# the MPI reference last: the ratios are to it
if [ "$hosts" = 1 ]; then
  configs="lci_hosts_1t lci_hosts_2t mpi_hosts"
else
  [ -n "$configs" ] || configs="lci_2x1 lci_1x2${base:+ base_2x1 base_1x2}"
  picked=""
  for c in $configs; do
    case $c in
      lci_2x1 | lci_1x2) ;;
      base_2x1 | base_1x2)
        [ -n "$base" ] || { echo "bench.sh: $c needs --base" >&2; exit 2; } ;;
      mpi_2) continue ;;
      *) echo "bench.sh: unknown configuration '$c'" >&2; exit 2 ;;
    esac
    picked="$picked $c"
  done
  configs="${picked# } mpi_2"
fi
i=0
while [ "$i" -lt "$reps" ]; do
  i=$((i + 1))
  for k in $ks; do
    for agg in $aggs; do
      # rotate the order of the configurations with the repetition
      order=$configs
      j=1
      while [ "$j" -lt "$i" ]; do
        first=${order%% *}
        order="${order#* } $first"
        j=$((j + 1))
      done
      for config in $order; do run "$config" "$k" "$agg" "$i"; done
    done
  done
done

python3 - "$csv" $configs <<'EOF' | tee "$out/summary.txt"
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
configs = sys.argv[2:]
ref = configs[-1]
points = {}
for r in rows:
    points.setdefault((int(r["k"]), r["agg"]), {}).setdefault(
        r["config"], []).append(float(r["total"]))
print("median time to solution (s) over %d runs; ratio = ours / MPI"
      % max(len(v) for p in points.values() for v in p.values()))
# a change against its base (--base): lci_X / base_X
ab = [(c, "base_" + c[4:]) for c in configs
      if c.startswith("lci_") and "base_" + c[4:] in configs]
print("%3s %5s" % ("k", "agg") + "".join(" %12s" % c for c in configs) +
      "".join(" %16s" % (c + "/mpi") for c in configs[:-1]) +
      "".join(" %18s" % (a + "/" + b[:4]) for a, b in ab))
for (k, agg), p in sorted(points.items()):
    m = {c: statistics.median(v) for c, v in p.items()}
    print("%3d %5s" % (k, agg) + "".join(" %12.3f" % m[c] for c in configs) +
          "".join(" %16.2f" % (m[c] / m[ref]) for c in configs[:-1]) +
          "".join(" %18.2f" % (m[a] / m[b]) for a, b in ab))
EOF
if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  /usr/bin/python3 "$here/plot_bench.py" "$csv" "$out/kmer.png" $configs
fi
echo "bench.sh: CSV $csv, summary $out/summary.txt"
