#!/usr/bin/env python3
"""Splits a `benchmarks/compare` run by the machine's core-to-core state.

The two vCPUs of these machines flip between a near state (a cache line
crosses in ~100 ns) and a far state (~400 ns) every few minutes
(../shared/design/BENCHMARKS.md); small-message figures of every library
move 2-4x with it. `compare --rawlimits` probes the state before and after
each rotation (one launch of every library) and writes both probes into
runs.csv. This script keeps the quiet rotations whose two probes agree
(both below --near-ns: near; both above --far-ns: far), and prints, per
point and state, each library's median and LCI's ratio to each peer,
computed rotation by rotation, then the median.

  benchmarks/by_state.py /tmp/cmp/runs.csv
  benchmarks/by_state.py runs.csv --near-ns 200 --far-ns 300 --quiet-cores 0.1

Ratios are LCI / peer of the figure's own unit: above 1 is better for rates
and bandwidths, below 1 is better for latencies (us).
"""
import argparse
import csv
import statistics
import sys
from collections import defaultdict


def state_of(row, near, far):
    try:
        b = float(row["probe_before_ns"])
        a = float(row["probe_after_ns"])
    except (KeyError, ValueError):
        return None
    if b < near and a < near:
        return "near"
    if b > far and a > far:
        return "far"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", help="runs.csv of a compare run (--rawlimits)")
    ap.add_argument("--near-ns", type=float, default=200.0,
                    help="both probes below this: near state (default 200)")
    ap.add_argument("--far-ns", type=float, default=300.0,
                    help="both probes above this: far state (default 300)")
    ap.add_argument("--quiet-cores", type=float, default=0.1,
                    help="drop launches whose background load was above "
                    "this many cores (default 0.1)")
    a = ap.parse_args()

    # (point, state) -> rep -> library -> value
    data = defaultdict(lambda: defaultdict(dict))
    units = {}
    dropped = 0
    with open(a.runs, newline="") as f:
        for row in csv.DictReader(f):
            st = state_of(row, a.near_ns, a.far_ns)
            try:
                bg = float(row["bg_cores"])
                value = float(row["value"])
            except (KeyError, ValueError):
                dropped += 1
                continue
            if st is None or bg > a.quiet_cores:
                dropped += 1
                continue
            point = (row["benchmark"], row["size"], row["op"], row["window"])
            units[point] = row["unit"]
            data[(point, st)][row["rep"]][row["library"]] = value

    if not data:
        print("no quiet rotation with agreeing probes in %s" % a.runs)
        return 1
    print("| benchmark | size | op | window | state | rotations | "
          "library | median | LCI / library |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (point, st) in sorted(data, key=lambda k: (k[0], k[1])):
        reps = data[(point, st)]
        libs = sorted({l for r in reps.values() for l in r},
                      key=lambda l: (l != "lci", l))
        for lib in libs:
            vals = [r[lib] for r in reps.values() if lib in r]
            ratios = [r["lci"] / r[lib] for r in reps.values()
                      if lib in r and "lci" in r and r[lib] > 0]
            ratio = ("%.2f" % statistics.median(ratios)
                     if ratios and lib != "lci" else "")
            print("| %s | %s | %s | %s | %s | %d | %s | %.4g %s | %s |" % (
                point[0], point[1], point[2], point[3], st, len(vals), lib,
                statistics.median(vals), units[point], ratio))
    print("\n(%d launches dropped: probes disagreeing or in between, or "
          "background load)" % dropped)
    return 0


if __name__ == "__main__":
    sys.exit(main())
