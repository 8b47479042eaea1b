#!/usr/bin/env python3
"""Rebuilds the headline table of docs/PERFORMANCE.md from docs/perf/*.csv.

  python3 benchmarks/headline.py            rewrite the table in the page
  python3 benchmarks/headline.py --check    exit 1 if the page's table is
                                            not what the CSVs give
  python3 benchmarks/headline.py --print    print the table only

The table lies between the page's `<!-- headline:begin -->` and
`<!-- headline:end -->` lines. Each row is one figure of a measured run
(docs/PERFORMANCE_LOG.md has the run: command, machine, method): the raw
file it comes from, which rows of it, and how the ratio is formed, the
same way as the log's section does, so the table repeats the log's
figures. A newer run of the same figure replaces the row's run (RUNS
below); nothing here measures. Python 3 standard library only.
"""
import argparse
import csv
import os
import re
import statistics
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PERF = os.path.join(ROOT, "docs", "perf")
PAGE = os.path.join(ROOT, "docs", "PERFORMANCE.md")
BEGIN = "<!-- headline:begin -->"
END = "<!-- headline:end -->"
PEER_NAMES = {"mpich": "MPICH", "openmpi": "Open MPI", "ucx": "UCX",
              "fi": "libfabric", "cxx": "C++ API", "mpi": "MPI"}


class Figure:
    """One row: LCI's value, the peers' values, LCI vs the best peer
    (above 1: LCI better) and how that ratio was formed."""

    def __init__(self, lci, peers, vs_best, how):
        self.lci, self.peers, self.vs_best, self.how = lci, peers, vs_best, how


def rows_of(name):
    with open(os.path.join(PERF, name), newline="") as f:
        return list(csv.DictReader(f))


def better_ratio(lci, peer, lower_is_better):
    """LCI vs one peer, above 1 when LCI is better."""
    return peer / lci if lower_is_better else lci / peer


# ---- the ways a raw file yields a figure -----------------------------------


def rotations(name, measure, lib, peers, lower, near_ns=200.0, scale=1.0):
    """A rotations file (every library once per rotation, a core-to-core
    probe before and after): the rotations whose two probes read the near
    state, each library's median, and LCI against the best peer of each
    rotation, then the median (the log's method for these files)."""
    by_rot = defaultdict(dict)
    for r in rows_of(name):
        if r["measure"] != measure:
            continue
        if not (float(r["probe_before_ns"]) < near_ns
                and float(r["probe_after_ns"]) < near_ns):
            continue
        by_rot[r["rotation"]][r["library"]] = float(r["value"]) * scale
    rots = [v for v in by_rot.values() if lib in v and all(p in v for p in peers)]
    ratios = [min(better_ratio(v[lib], v[p], lower) for p in peers)
              for v in rots]
    return Figure(statistics.median(v[lib] for v in rots),
                  {p: statistics.median(v[p] for v in rots) for p in peers},
                  statistics.median(ratios),
                  "r%d" % len(rots))


def results(name, bench, size, peers, lower, pairwise, scale=1.0, **match):
    """A `benchmarks/compare` results file: the median of each library at
    one point; the ratio either the file's own pair-by-pair median
    (`lci/<peer>` rows) or of the medians."""
    vals, ratios = {}, {}
    for r in rows_of(name):
        if r["benchmark"] != bench or int(r["size"]) != size:
            continue
        if any(r[k] != str(v) for k, v in match.items()):
            continue
        lib = r["library"]
        if lib.startswith("lci/"):
            ratios[lib[4:]] = float(r["median"])
        else:
            vals[lib] = float(r["median"]) * scale
    if pairwise:
        # the file's ratios are LCI / peer in the figure's unit
        best = min((1 / ratios[p]) if lower else ratios[p] for p in peers)
        how = "p"
    else:
        best = min(better_ratio(vals["lci"], vals[p], lower) for p in peers)
        how = "m"
    return Figure(vals["lci"], {p: vals[p] for p in peers}, best, how)


def sweep(name, measure, size, lib="new", peers=("mpich", "openmpi"),
          scale=1.0):
    """benchmarks/eager_limit_rotations.sh's file (every library once per
    round): LCI against the better peer of each round, then the median of
    the rounds (the log's method for these files); bandwidth in MB/s and
    above 1 when LCI's is higher, latency in us and above 1 when it is
    lower."""
    by_round = defaultdict(dict)
    for r in rows_of(name):
        if r["measure"] == measure and int(r["size"]) == size:
            by_round[r["round"]][r["library"]] = float(r["value"]) * scale
    lower = measure == "latency"
    rounds = [v for v in by_round.values()
              if lib in v and all(p in v for p in peers)]
    return Figure(statistics.median(v[lib] for v in rounds),
                  {p: statistics.median(v[p] for v in rounds) for p in peers},
                  statistics.median(
                      min(better_ratio(v[lib], v[p], lower) for p in peers)
                      for v in rounds),
                  "r%d" % len(rounds))


def collective(name, coll, size, ranks=2):
    """compare_coll.py's file: LCI's best algorithm against each MPI's
    median time (us per call) at `ranks` ranks; ratio of the medians."""
    lci, peers = None, {}
    for r in rows_of(name):
        if (r["collective"] != coll or int(r["size"]) != size
                or int(r["ranks"]) != ranks):
            continue
        if r["library"] == "lci":
            t = float(r["median_us"])
            lci = t if lci is None else min(lci, t)
        elif r["library"] in ("mpich", "openmpi"):
            peers[r["library"]] = float(r["median_us"])
    return Figure(lci, peers, min(p / lci for p in peers.values()), "m")


def capi(name, scale=1.0):
    """The C interface against the C++ one in the same launches: round
    trips per second; C / C++ launch by launch, then the median."""
    rs = rows_of(name)
    c = [float(r["c_round_trips_per_s"]) * scale for r in rs]
    cxx = [float(r["cxx_round_trips_per_s"]) * scale for r in rs]
    return Figure(statistics.median(c), {"cxx": statistics.median(cxx)},
                  statistics.median(a / b for a, b in zip(c, cxx)),
                  "l%d" % len(rs))


def kmer(name, k, agg, config):
    """apps/kmer/bench.sh's file: time to solution (s), median of the
    repetitions; MPI / ours of the medians."""
    times = defaultdict(list)
    for r in rows_of(name):
        if r["k"] == str(k) and r["agg"] == agg:
            times[r["config"]].append(float(r["total"]))
    ours = statistics.median(times[config])
    mpi = statistics.median(times["mpi_2"])
    return Figure(ours, {"mpi": mpi}, mpi / ours, "m")


# ---- the table ---------------------------------------------------------------

SHM = "one node (native shm)"
OFI_SHM = "one node (libfabric shm)"
HOSTS = "two hosts (tcp over veth)"
LOG = "PERFORMANCE_LOG.md"
MPIS = ["mpich", "openmpi"]

# The runs the table draws on: (where, commit and date, raw file, the
# start of the log's section heading).
RUNS = {
    "lean": (SHM, "efd717c, 2026-11-25",
             "native_shm_lean_progress.rotations.csv",
             "Native shm backend with the shorter progress call"),
    "netif": (SHM, "c3ff08d, 2026-11-27",
              "native_shm_c3ff08d_2026-11-27.rotations.csv",
              "Native shm small messages after rate5"),
    "rma": (SHM, "b6ce070, 2026-11-25",
            "native_shm_small_rma_bandwidth.results.csv",
            "Native shm RMA: small transfers"),
    "split": (SHM, "f36bea1, 2026-11-28", "rdv_split_sweep_2026-11-28.csv",
              "The split rendezvous on native shm"),
    "sweep": (SHM, "f6f7220, 2026-11-28",
              "sendrecv_sweep_f6f7220_2026-11-28.csv",
              "Everything merged on 2026-11-28, second round"),
    "threads": (OFI_SHM, "3e1a5a5, 2026-11-24", "msgrate-threads.results.csv",
                "Threads through loopback"),
    "coll": (SHM, "648e5f5, 2026-11-28", "coll_648e5f5_2026-11-28.csv",
                 "Everything merged on 2026-11-28"),
    "coll_shm": (SHM, "75830d4, 2026-11-27", "coll_shm_2026-11-27.csv",
                 "Collectives: large messages through the segment"),
    "hosts": (HOSTS, "d9307e0, 2026-11-27", "multihost_socket_2026-11-27.csv",
              "The native socket backend across two hosts"),
    "hosts_bw": (HOSTS, "e859127, 2026-11-27",
                 "multihost_bandwidth_e859127_2026-11-27.csv",
                 "Two hosts, bandwidth with the direct payload receive"),
    "hosts_loaded": (HOSTS, "2a45ac4, 2026-11-27",
                     "multihost_bandwidth_loaded_2026-11-27.csv",
                     "Two hosts, large messages on a loaded machine"),
    "capi": (SHM, "4278f14, 2026-11-27", "capi_4278f14_2026-11-27.csv",
             "The C interface and the socket backend's sleep"),
    "kmer": (SHM, "42e5b2d, 2026-11-27", "kmer_42e5b2d_2026-11-27.csv",
             "The day's branches merged, on a quiet machine"),
}

KIB, MIB = 1 << 10, 1 << 20

# (run, measure, unit, lower is better, digits, figure(raw file))
ROWS = [
    ("netif", "8 B ping-pong, active message, half round trip", "us", True,
     3, lambda f: rotations(f, "pingpong8", "lci_new_am", MPIS, True)),
    ("netif", "8 B ping-pong, send/recv", "us", True, 3,
     lambda f: rotations(f, "pingpong8", "lci_new_sendrecv", MPIS, True)),
    ("lean", "8 B ping-pong, active message, against UCX "
     "`ucx_perftest -t tag_lat`", "us", True, 3,
     lambda f: rotations(f, "pingpong8", "lci_am", ["ucx"], True)),
    ("netif", "8 B message rate, active-message stream, window 64 "
     "(MPI: send/recv)", "M msgs/s", False, 1,
     lambda f: rotations(f, "stream8_w64", "lci_new_am", MPIS, False,
                         scale=1 / 8)),
    ("netif", "8 B message rate, send/recv stream, window 64", "M msgs/s",
     False, 1,
     lambda f: rotations(f, "stream8_w64", "lci_new_sendrecv", MPIS, False,
                         scale=1 / 8)),
] + [
    ("netif", "%s ping-pong, send/recv (eager)" % label, "us", True, 3,
     lambda f, size=size: rotations(f, "pingpong%d" % size,
                                    "lci_new_sendrecv", MPIS, True))
    for label, size in (("512 B", 512), ("4 KiB", 4 * KIB), ("8 KiB", 8 * KIB))
] + [
    ("rma", "bandwidth send/recv, %s, window 64" % label, "GB/s", False, 2,
     lambda f, size=size: results(f, "bandwidth", size, MPIS + ["fi"], False,
                                  True, scale=1e-3, op="sendrecv"))
    for label, size in (("16 KiB", 16 * KIB),)
] + [
    ("sweep", "bandwidth send/recv, %s, window 64" % label, "GB/s", False, 2,
     lambda f, size=size: sweep(f, "bandwidth", size, scale=1e-3))
    for label, size in (("20 KiB", 20 * KIB), ("32 KiB", 32 * KIB))
] + [
    ("split", "bandwidth send/recv, %s, window 64" % label, "GB/s", False, 2,
     lambda f, size=size: sweep(f, "bandwidth", size, scale=1e-3))
    for label, size in (("64 KiB", 64 * KIB), ("1 MiB", MIB),
                        ("16 MiB", 16 * MIB))
] + [
    ("split", "%s ping-pong, send/recv (rendezvous)" % label, "us", True, 2,
     lambda f, size=size: sweep(f, "latency", size))
    for label, size in (("64 KiB", 64 * KIB), ("1 MiB", MIB))
] + [
    ("threads", "8 B message rate, 1 rank x 2 threads, a device each",
     "M msgs/s", False, 2,
     lambda f: results(f, "msgrate", 8, MPIS, False, True, scale=1e-6,
                       mode="thread-dedicated", threads=2)),
] + [
    (run, measure, "us", True, digits,
     lambda f, coll=coll, size=size: collective(f, coll, size))
    for run, measure, coll, size, digits in (
        ("coll", "barrier, 2 ranks", "barrier", 0, 3),
        ("coll", "allreduce, 8 B, 2 ranks", "allreduce", 8, 3),
        ("coll", "allreduce, 64 KiB, 2 ranks", "allreduce", 64 * KIB, 1),
        ("coll", "broadcast, 8 B, 2 ranks", "broadcast", 8, 3),
        ("coll", "broadcast, 4 KiB, 2 ranks", "broadcast", 4 * KIB, 3),
        ("coll", "broadcast, 64 KiB, 2 ranks", "broadcast", 64 * KIB, 1),
        ("coll", "allgather, 4 KiB, 2 ranks", "allgather", 4 * KIB, 3),
        ("coll", "allgather, 64 KiB, 2 ranks", "allgather", 64 * KIB, 1),
        ("coll", "alltoall, 4 KiB, 2 ranks", "alltoall", 4 * KIB, 3),
        ("coll", "alltoall, 64 KiB, 2 ranks", "alltoall", 64 * KIB, 1),
        ("coll", "alltoall, 1 MiB, 2 ranks", "alltoall", MIB, 1),
        ("coll", "reduce_scatter, 1 MiB, 2 ranks", "reduce_scatter", MIB,
         1))
] + [
    ("coll", measure, "us", True, digits,
     lambda f, coll=coll, size=size: collective(f, coll, size, 4))
    for measure, coll, size, digits in (
        ("barrier, 4 ranks on 2 cores", "barrier", 0, 3),
        ("allreduce, 8 B, 4 ranks on 2 cores", "allreduce", 8, 3),
        ("broadcast, 8 B, 4 ranks on 2 cores", "broadcast", 8, 3),
        ("alltoall, 8 B, 4 ranks on 2 cores", "alltoall", 8, 3),
        ("reduce, 64 KiB, 4 ranks on 2 cores", "reduce", 64 * KIB, 1),
        ("reduce, 1 MiB, 4 ranks on 2 cores", "reduce", MIB, 1),
        ("alltoall, 64 KiB, 4 ranks on 2 cores", "alltoall", 64 * KIB, 1),
        ("alltoall, 1 MiB, 4 ranks on 2 cores", "alltoall", MIB, 1))
] + [
    ("coll_shm", "%s, %s ranks (loaded machine)" % (coll_label, ranks), "us",
     True, 1,
     lambda f, coll=coll, size=size, ranks=ranks: collective(f, coll, size,
                                                             ranks))
    for coll_label, coll, size, ranks in (
        ("allreduce, 1 MiB", "allreduce", MIB, 2),
        ("broadcast, 1 MiB", "broadcast", MIB, 2),
        ("reduce, 1 MiB", "reduce", MIB, 2),
        ("reduce_scatter, 1 MiB", "reduce_scatter", MIB, 2),
        ("allgather, 4 MiB", "allgather", 4 * MIB, 2),
        ("alltoall, 4 MiB", "alltoall", 4 * MIB, 2),
        ("allreduce, 1 MiB", "allreduce", MIB, 4))
] + [
    ("hosts", "8 B ping-pong, send/recv, half round trip", "us", True, 2,
     lambda f: results(f, "latency", 8, MPIS, True, False)),
    ("hosts", "8 B message rate, 2 threads a rank, a device each, window 64",
     "M msgs/s", False, 3,
     lambda f: results(f, "msgrate", 8, MPIS, False, False, scale=1e-6,
                       mode="thread-dedicated", threads=2)),
] + [
    ("hosts_bw", "bandwidth send/recv, %s, window 64" % label, "GB/s",
     False, 2,
     lambda f, size=size: results(f, "bandwidth", size, MPIS, False, False,
                                  scale=1e-3))
    for label, size in (("1 MiB", MIB), ("4 MiB", 4 * MIB),
                        ("16 MiB", 16 * MIB))
] + [
    ("hosts_loaded", "bandwidth send/recv, %s, window 64 (loaded machine)"
     % label, "GB/s", False, 3,
     lambda f, size=size: results(f, "bandwidth", size, MPIS, False, False,
                                  scale=1e-3))
    for label, size in (("8 MiB", 8 * MIB), ("16 MiB", 16 * MIB),
                        ("32 MiB", 32 * MIB))
] + [
    ("capi", "C interface: 8 B active-message round trips, against the C++ "
     "interface", "M round trips/s", False, 2,
     lambda f: capi(f, scale=1e-6)),
    ("kmer", "k-mer counting, k = 31, 8 KiB aggregation, 1 process x 2 "
     "threads (MPI: 2 processes), time to solution", "s", True, 2,
     lambda f: kmer(f, 31, "8K", "lci_1x2")),
    ("kmer", "k-mer counting, k = 51, same", "s", True, 2,
     lambda f: kmer(f, 51, "8K", "lci_1x2")),
]


def anchor(prefix):
    """The link target of the log's heading that starts with `prefix`
    (GitHub's rule: lower case, punctuation dropped, spaces to hyphens)."""
    with open(os.path.join(ROOT, "docs", LOG)) as f:
        for line in f:
            m = re.match(r"#+ (.*)", line)
            if m and m.group(1).startswith(prefix):
                slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower())
                return slug.replace(" ", "-")
    raise SystemExit("headline.py: no heading of %s starts with %r"
                     % (LOG, prefix))


def number(x, digits):
    return "{:,.{d}f}".format(x, d=digits)


def table():
    out = ["| where | measure | unit | LCI | peers | LCI vs best peer "
           "| commit, date | raw rows |\n",
           "|---|---|---|---|---|---|---|---|\n"]
    for run, measure, unit, lower, digits, fig in ROWS:
        group, when, raw, section = RUNS[run]
        f = fig(raw)
        peers = ", ".join("%s %s" % (PEER_NAMES.get(p, p), number(v, digits))
                          for p, v in f.peers.items())
        out.append("| %s | [%s](%s#%s) | %s%s | %s | %s | **%.2f** (%s) "
                   "| %s | [%s](perf/%s) |\n" % (
                       group, measure, LOG, anchor(section), unit,
                       " (lower is better)" if lower else "",
                       number(f.lci, digits), peers, f.vs_best, f.how, when,
                       raw, raw))
    return "".join(out)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--check", action="store_true",
                   help="exit 1 if the page's table differs")
    g.add_argument("--print", action="store_true", help="print the table")
    ap.add_argument("--page", default=PAGE, help="default docs/PERFORMANCE.md")
    a = ap.parse_args(argv[1:])
    t = table()
    if a.print:
        sys.stdout.write(t)
        return 0
    text = open(a.page).read()
    if text.count(BEGIN) != 1 or text.count(END) != 1:
        sys.stderr.write("%s: needs one %s and one %s line\n"
                         % (a.page, BEGIN, END))
        return 2
    head, rest = text.split(BEGIN + "\n", 1)
    _, tail = rest.split(END, 1)
    new = head + BEGIN + "\n" + t + END + tail
    if a.check:
        if new != text:
            print("FAIL: the table in %s is not what docs/perf/*.csv give; "
                  "regenerate it with: python3 benchmarks/headline.py"
                  % a.page)
            return 1
        print("%s: the table matches docs/perf/*.csv" % a.page)
        return 0
    if new != text:
        with open(a.page, "w") as f:
            f.write(new)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
