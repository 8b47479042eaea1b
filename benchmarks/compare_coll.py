#!/usr/bin/env python3
"""Collective latency: LCI (lci_coll under lcrun, every algorithm) against
MPICH (mpiexec.hydra, UCX_TLS=self,sm) and Open MPI (mpirun, btl self,vader)
in one run. For each collective and rank count the programs take turns,
A B C A B C, --runs launches each; every launch sweeps the sizes. Prints CSV:
one row per library, algorithm, size (the median over launches of each
launch's median time per call, in microseconds) and ratio rows
`lci-<alg>/<mpi>` = MPI time / LCI time (above 1: LCI is faster).

Ours runs on the library's default backend (auto: native shared memory on
one node) unless --backend or LCI_ATTR_BACKEND in the environment says
otherwise (--backend wins); a comment line `# lci backend: NAME` says which
backend ran (as the program reported it).

usage: compare_coll.py --build DIR [--ranks 4] [--runs 3]
                       [--colls barrier,broadcast,...] [--sizes 8,4K,64K,1M]
                       [--libs lci,mpich,openmpi] [--iters 1000]
                       [--backend auto|shm|ofi|hybrid]
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

# ours: the library's choice (none) and every algorithm that can be asked
# for by name
ALGS = {
    "barrier": ["none"],
    "broadcast": ["none", "direct", "tree", "ring"],
    "reduce": ["none"],
    "allreduce": ["none", "direct", "tree", "ring"],
    "reduce_scatter": ["none", "direct", "tree", "ring"],
    "allgather": ["none", "direct", "ring"],
    "alltoall": ["none"],
}


def command(a, lib, coll, alg, n):
    args = ["--coll", coll, "--algorithm", alg, "--sizes", a.sizes,
            "--iters", str(a.iters), "--runs", "3"]
    env = dict(os.environ, FI_TCP_IFACE="lo", FI_SOCKETS_IFACE="lo")
    if lib == "lci":
        # the provider matters only when the backend is libfabric's
        env.setdefault("LCI_ATTR_OFI_PROVIDER_NAME", "shm")
        if a.backend:
            env["LCI_ATTR_BACKEND"] = a.backend
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


# the backends our program reported (each printed once)
BACKENDS_SEEN = set()


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
    for l in p.stdout.splitlines():
        if lib == "lci" and l.startswith("# backend: "):
            backend = l[len("# backend: "):].strip()
            if backend not in BACKENDS_SEEN:
                BACKENDS_SEEN.add(backend)
                print("# lci backend: %s" % backend, flush=True)
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
    ap.add_argument("--algs", help="only these of our algorithms, e.g. "
                    "none (the library's choice)")
    ap.add_argument("--backend", choices=["auto", "shm", "ofi", "hybrid"],
                    help="LCI_ATTR_BACKEND for ours (default: the "
                    "environment's, else the library's default)")
    a = ap.parse_args()
    libs = a.libs.split(",")
    w = csv.writer(sys.stdout)
    w.writerow(["collective", "ranks", "library", "algorithm", "size",
                "median_us", "runs"])
    for n in [int(x) for x in a.ranks.split(",")]:
        for coll in a.colls.split(","):
            variants = [("lci", alg) for alg in ALGS[coll] if "lci" in libs
                        and (not a.algs or alg in a.algs.split(","))]
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
