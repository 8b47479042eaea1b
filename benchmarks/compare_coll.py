#!/usr/bin/env python3
"""Collective latency: LCI (lci_coll under lcrun, every algorithm) against
MPICH (mpiexec.hydra, UCX_TLS=self,sm) and Open MPI (mpirun, btl self,vader)
in one run. For each collective and rank count the programs take turns,
A B C A B C, --runs launches each; every launch sweeps the sizes. Prints CSV:
one row per library, algorithm, size (the median over launches of each
launch's median time per call, in microseconds) and ratio rows
`lci-<alg>/<mpi>` = MPI time / LCI time (above 1: LCI is faster).

usage: compare_coll.py --build DIR [--ranks 4] [--runs 3]
                       [--colls barrier,broadcast,...] [--sizes 8,4K,64K,1M]
                       [--libs lci,mpich,openmpi] [--iters 1000]
"""
import argparse
import csv
import io
import os
import statistics
import subprocess
import sys

# MPI launchers run in a private loopback-only network namespace (their
# control ports listen on every interface)
NETNS = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "tools", "lo-netns")

ALGS = {
    "barrier": ["none"],
    "broadcast": ["direct", "tree", "ring"],
    "reduce": ["none"],
    "allreduce": ["direct", "tree", "ring"],
    "reduce_scatter": ["direct", "tree", "ring"],
    "allgather": ["direct", "ring"],
    "alltoall": ["none"],
}


def command(a, lib, coll, alg, n):
    args = ["--coll", coll, "--algorithm", alg, "--sizes", a.sizes,
            "--iters", str(a.iters), "--runs", "3"]
    env = dict(os.environ, FI_TCP_IFACE="lo", FI_SOCKETS_IFACE="lo")
    if lib == "lci":
        env.setdefault("LCI_ATTR_OFI_PROVIDER_NAME", "shm")
        env.setdefault("LCI_ATTR_BACKEND", "ofi")  # unless the caller says
        return ([os.path.join(a.build, "tools/lcrun/lcrun"), "-n", str(n),
                 "--timeout", "600",
                 os.path.join(a.build, "benchmarks/lci_coll")] + args, env)
    prog = os.path.join(a.build, "benchmarks/mpi/mpi_coll_" + lib)
    if lib == "mpich":
        env.setdefault("UCX_TLS", "self,sm")
        return ([NETNS, "/usr/bin/mpiexec.hydra", "-launcher", "fork", "-n",
                 str(n), prog] + args, env)
    return ([NETNS, "mpirun.openmpi", "--allow-run-as-root", "--oversubscribe",
             "--bind-to", "none", "--mca", "btl", "self,vader", "--mca", "pml",
             "ob1", "--mca", "oob_tcp_if_include", "lo", "-n", str(n), prog]
            + args, env)


def launch(a, lib, coll, alg, n):
    cmd, env = command(a, lib, coll, alg, n)
    p = subprocess.run(cmd, capture_output=True, text=True, env=env,
                       timeout=900)
    if p.returncode != 0:
        raise RuntimeError("%s failed (%d):\n%s%s" % (" ".join(cmd),
                                                       p.returncode, p.stdout,
                                                       p.stderr))
    rows = [r for r in csv.DictReader(
        io.StringIO("\n".join(l for l in p.stdout.splitlines()
                              if not l.startswith("#"))))]
    return {int(r["size"]): float(r["median"]) for r in rows}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--ranks", default="4")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--colls", default=",".join(ALGS))
    ap.add_argument("--sizes", default="8,4K,64K,1M")
    ap.add_argument("--libs", default="lci,mpich,openmpi")
    ap.add_argument("--iters", type=int, default=1000)
    a = ap.parse_args()
    libs = a.libs.split(",")
    w = csv.writer(sys.stdout)
    w.writerow(["collective", "ranks", "library", "algorithm", "size",
                "median_us", "runs"])
    for n in [int(x) for x in a.ranks.split(",")]:
        for coll in a.colls.split(","):
            variants = [("lci", alg) for alg in ALGS[coll] if "lci" in libs]
            variants += [(lib, "none") for lib in libs if lib != "lci"]
            times = {v: {} for v in variants}
            for _ in range(a.runs):
                for v in variants:
                    for size, t in launch(a, v[0], coll, v[1], n).items():
                        times[v].setdefault(size, []).append(t)
            med = {v: {s: statistics.median(ts) for s, ts in times[v].items()}
                   for v in variants}
            for v in variants:
                for s in sorted(med[v]):
                    w.writerow([coll, n, v[0], v[1], s, "%.3f" % med[v][s],
                                len(times[v][s])])
            for v in variants:
                if v[0] != "lci":
                    continue
                for m in variants:
                    if m[0] == "lci":
                        continue
                    for s in sorted(med[v]):
                        if s in med[m] and med[v][s] > 0:
                            w.writerow([coll, n, "lci-%s/%s" % (v[1], m[0]),
                                        "ratio", s,
                                        "%.2f" % (med[m][s] / med[v][s]), ""])
            sys.stdout.flush()


if __name__ == "__main__":
    main()
