#!/usr/bin/python3
"""Plots a compare_coll.py CSV: for each rank count, the better MPI's
median time over ours (above 1: ours faster) per collective and size, on
a log axis with the line of parity.

usage: plot_coll.py RESULTS.csv OUT.png
Needs matplotlib (python3-matplotlib; scripts/deps.sh --bench).
"""
import csv
import sys
from collections import defaultdict

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def label(size):
    if size == 0:
        return "-"
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift:
            return "%d %s" % (size >> shift, unit)
    return "%d B" % size


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    times = defaultdict(dict)  # (ranks, coll, size) -> library -> us
    order = []
    with open(argv[1], newline="") as f:
        for r in csv.DictReader(line for line in f if not line.startswith("#")):
            if r["algorithm"] == "ratio":
                continue
            key = (int(r["ranks"]), r["collective"], int(r["size"]))
            if key not in times:
                order.append(key)
            lib = r["library"]
            t = float(r["median_us"])
            times[key][lib] = min(t, times[key].get(lib, t))
    ranks = sorted({k[0] for k in order})
    fig, axes = plt.subplots(len(ranks), 1, figsize=(11, 3.6 * len(ranks)),
                             squeeze=False)
    for ax, n in zip(axes[:, 0], ranks):
        keys = [k for k in order if k[0] == n and "lci" in times[k]
                and len(times[k]) > 1]
        ratios = [min(t for lib, t in times[k].items() if lib != "lci")
                  / times[k]["lci"] for k in keys]
        xs = range(len(keys))
        ax.bar(xs, ratios, color=["tab:green" if r >= 1 else "tab:red"
                                  for r in ratios])
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_yscale("log")
        ax.set_xticks(list(xs))
        ax.set_xticklabels(["%s %s" % (k[1], label(k[2])) for k in keys],
                           fontsize=7, rotation=60, ha="right")
        ax.yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.yaxis.set_minor_formatter(matplotlib.ticker.ScalarFormatter())
        peers = sorted({lib for k in keys for lib in times[k] if lib != "lci"})
        ax.set_ylabel("best MPI time / LCI time")
        ax.set_title("%d ranks on one node (against %s)"
                     % (n, ", ".join(peers)))
    fig.tight_layout()
    fig.savefig(argv[2], dpi=110)


if __name__ == "__main__":
    main(sys.argv)
