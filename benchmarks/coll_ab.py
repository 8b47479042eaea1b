#!/usr/bin/env python3
"""Collective latency A/B: our library's default algorithm (`none`) in
several environments (e.g. one that turns a feature off) against the MPIs,
launched in turn (A B C ... A B C), --runs launches each, as
compare_coll.py does (whose command lines it reuses). Prints CSV: one row
per variant and size (the median over launches of each launch's median,
microseconds) and ratio rows `<variant>/<mpi>` = MPI time / ours.

usage: coll_ab.py --build DIR --ranks N --colls broadcast,...
                  --sizes 65536,1048576 [--runs 3] [--libs openmpi,mpich]
                  [--variant NAME=VAR=VALUE[,VAR=VALUE]] ...
(a variant with no VAR=VALUE runs the environment as it is: `--variant
main=`)
"""
import argparse
import csv
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_coll  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--colls", required=True)
    ap.add_argument("--sizes", required=True)
    ap.add_argument("--iters", type=int, default=1000)
    ap.add_argument("--libs", default="openmpi,mpich")
    ap.add_argument("--variant", action="append", default=[])
    ap.add_argument("--backend", default=None)
    a = ap.parse_args()
    variants = []
    for v in a.variant or ["lci="]:
        name, _, envs = v.partition("=")
        env = dict(kv.split("=", 1) for kv in envs.split(",") if kv)
        variants.append((name, "lci", env))
    variants += [(lib, lib, {}) for lib in a.libs.split(",") if lib]
    w = csv.writer(sys.stdout)
    w.writerow(["collective", "ranks", "variant", "size", "median_us", "runs"])
    base = dict(os.environ)
    for coll in a.colls.split(","):
        times = {v[0]: {} for v in variants}
        for _ in range(a.runs):
            for name, lib, env in variants:
                os.environ.clear()
                os.environ.update(base)
                os.environ.update(env)
                got = compare_coll.launch(a, lib, coll, "none", a.ranks)
                for size, t in got.items():
                    times[name].setdefault(size, []).append(t)
        os.environ.clear()
        os.environ.update(base)
        med = {n: {s: statistics.median(ts) for s, ts in t.items()}
               for n, t in times.items()}
        for name, _, _ in variants:
            for s in sorted(med[name]):
                w.writerow([coll, a.ranks, name, s, "%.3f" % med[name][s],
                            len(times[name][s])])
        for name, lib, _ in variants:
            if lib != "lci":
                continue
            for mpi, mlib, _ in variants:
                if mlib == "lci":
                    continue
                for s in sorted(med[name]):
                    if s in med[mpi] and med[name][s] > 0:
                        w.writerow([coll, a.ranks, "%s/%s" % (name, mpi), s,
                                    "%.2f" % (med[mpi][s] / med[name][s]),
                                    ""])
        sys.stdout.flush()


if __name__ == "__main__":
    main()
