#!/usr/bin/python3
"""plot_bench.py CSV PNG CONFIG...: the time to solution of apps/kmer/bench.sh
as grouped bars, one group per (k, aggregation) point and one bar per
configuration (in the order given; the MPI reference last), the height the
median over the repetitions and the whisker the fastest and slowest run.
Takes bench.sh's CSV (k,agg,config,rep,total,...); needs matplotlib."""
import csv
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) < 4:
        sys.exit("usage: plot_bench.py CSV PNG CONFIG...")
    path, png, configs = sys.argv[1], sys.argv[2], sys.argv[3:]
    times = {}
    for r in csv.DictReader(open(path)):
        key = (int(r["k"]), r["agg"])
        times.setdefault(key, {}).setdefault(r["config"], []).append(
            float(r["total"]))
    points = sorted(times, key=lambda p: (p[0], int(p[1].rstrip("K"))))
    if not points:
        sys.exit("plot_bench.py: no rows in %s" % path)
    width = 0.8 / len(configs)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for i, c in enumerate(configs):
        xs, med, lo, hi = [], [], [], []
        for j, p in enumerate(points):
            v = times[p].get(c)
            if not v:
                continue
            m = statistics.median(v)
            xs.append(j + (i - (len(configs) - 1) / 2) * width)
            med.append(m)
            lo.append(m - min(v))
            hi.append(max(v) - m)
        ax.bar(xs, med, width, yerr=[lo, hi], capsize=2, label=c)
    ax.set_xticks(range(len(points)))
    ax.set_xticklabels(["k=%d\n%s" % p for p in points])
    ax.set_xlabel("k and aggregation buffer")
    ax.set_ylabel("time to solution (s), median; whiskers: min-max")
    ax.set_title("k-mer counting, seqprep reads (lower is better)")
    ax.legend(fontsize="small")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    print("plot_bench.py: %s" % png)


if __name__ == "__main__":
    main()
