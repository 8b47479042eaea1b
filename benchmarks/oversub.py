#!/usr/bin/env python3
"""Oversubscription benchmark (issue 9): the point-to-point all-to-all
(lci_alltoall / mpi_alltoall_<flavor>, benchmarks/common/alltoall_suite.hpp)
at 2, 4, 8, 16 and 32 ranks on however many cores the machine has, for LCI
(native shm backend; --wait sync: the library's sync_wait, and --wait
progress: the program's own lci::progress() loop) and the MPI twins (Open
MPI over vader, MPICH), side by side in one session.

The figure is the time per message of the whole job (ns; rounds x n x (n-1)
x k messages over the wall time). Launches alternate library by library for
each rank count and repeat --repeats times; the table shows the median of
the repeats and each library's ratio to its own 2-rank figure (the issue's
target: 32 ranks within 10x of 2 ranks). A run that exceeds --timeout is
shown as ">T s" (its per-message time is at least that over one round).

  benchmarks/oversub.py --build build/release
  benchmarks/oversub.py --build build/release --ranks 2,32 --repeats 5

This is a benchmark, never a test: it prints, it does not judge speed (its
exit status is 1 only when a launch failed).
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

# in a private loopback-only network namespace (their control ports listen
# on every interface)
NETNS = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "tools", "lo-netns")
OMPI = [NETNS, "mpirun.openmpi", "--allow-run-as-root", "--oversubscribe",
        "--bind-to", "none", "--mca", "btl", "self,vader", "--mca", "pml",
        "ob1", "--mca", "oob_tcp_if_include", "lo"]
HYDRA = [NETNS, "mpiexec.hydra", "-launcher", "fork"]


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def commands(lib, n, build, args, lcrun):
    """The command line and extra environment of one launch."""
    bench = ["--size", str(args.size), "--k", str(args.k), "--seconds",
             str(args.seconds), "--runs", str(args.runs), "--warmup",
             str(args.warmup)]
    t = str(args.timeout)
    if lib.startswith("lci"):
        wait = lib.split("-", 1)[1]
        prog = os.path.join(build, "benchmarks", "lci_alltoall")
        return ([lcrun, "-n", str(n), "--timeout", t, prog, "--wait", wait] +
                bench, {"LCI_ATTR_BACKEND": "shm"})
    if lib == "openmpi":
        prog = os.path.join(build, "benchmarks", "mpi", "mpi_alltoall_openmpi")
        return OMPI + ["--timeout", t, "-n", str(n), prog] + bench, {}
    prog = os.path.join(build, "benchmarks", "mpi", "mpi_alltoall_mpich")
    return (HYDRA + ["-n", str(n), prog] + bench,
            {"MPIEXEC_TIMEOUT": t, "UCX_TLS": "self,sm"})


def run_one(lib, n, build, args, lcrun):
    """ns per message (float), or None and a note."""
    cmd, extra = commands(lib, n, build, args, lcrun)
    env = dict(os.environ)
    env.update(extra)
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True,
                           timeout=args.timeout + 30)
    except subprocess.TimeoutExpired:
        return None, ">%d s" % args.timeout
    for line in p.stdout.splitlines():
        f = line.split(",")
        if f[0] == "alltoall" and len(f) >= 10:
            return float(f[7]), ""
    if p.returncode != 0 and ("timeout" in (p.stdout + p.stderr).lower() or
                              "timed out" in (p.stdout + p.stderr).lower()):
        return None, ">%d s" % args.timeout
    tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
    return None, "error (exit %d: %s)" % (p.returncode, tail[:80])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build/release",
                    help="the build tree (release)")
    ap.add_argument("--lcrun", default=None,
                    help="lcrun (default: BUILD/tools/lcrun/lcrun)")
    ap.add_argument("--ranks", default="2,4,8,16,32")
    ap.add_argument("--libs", default="lci-sync,lci-progress,openmpi,mpich",
                    help="lci-sync, lci-progress, openmpi, mpich")
    ap.add_argument("--repeats", type=int, default=3,
                    help="launches per library and rank count (median)")
    ap.add_argument("--size", type=int, default=8)
    ap.add_argument("--k", type=int, default=4,
                    help="messages per ordered pair of ranks and round")
    ap.add_argument("--seconds", type=float, default=2.0,
                    help="timed seconds per launch")
    ap.add_argument("--runs", type=int, default=3,
                    help="timed runs per launch (the program's median)")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--timeout", type=int, default=120,
                    help="seconds before a launch is killed")
    ap.add_argument("--csv", default=None,
                    help="also write every launch as CSV to this file")
    args = ap.parse_args()
    lcrun = args.lcrun or os.path.join(args.build, "tools", "lcrun", "lcrun")
    ranks = [int(x) for x in args.ranks.split(",")]
    libs = args.libs.split(",")
    known = ("lci-sync", "lci-progress", "openmpi", "mpich")
    bad = [lib for lib in libs if lib not in known]
    if bad:
        ap.error("--libs: unknown %s (choose from %s)" %
                 (", ".join(bad), ", ".join(known)))
    ncpu = len(os.sched_getaffinity(0))
    print("# oversub: %d cores available, load %s at start" %
          (ncpu, loadavg()))
    print("# %s" % " ".join(sys.argv))
    results = {}  # (lib, n) -> list of values or notes
    rows = []
    for n in ranks:
        for rep in range(args.repeats):
            for lib in libs:
                t0 = time.time()
                v, note = run_one(lib, n, args.build, args, lcrun)
                results.setdefault((lib, n), []).append(v if v else note)
                rows.append((lib, n, rep, v, note, time.time() - t0,
                             loadavg()))
                print("# %-13s n=%-3d rep %d: %s (%.1f s, load %s)" %
                      (lib, n, rep, "%.1f ns/msg" % v if v else note,
                       time.time() - t0, loadavg()), flush=True)
    if args.csv:
        with open(args.csv, "w") as f:
            f.write("library,ranks,repeat,ns_per_msg,note,seconds,load\n")
            for r in rows:
                f.write("%s,%d,%d,%s,%s,%.1f,%s\n" %
                        (r[0], r[1], r[2], "%.1f" % r[3] if r[3] else "",
                         r[4], r[5], r[6]))

    def median(lib, n):
        vals = [x for x in results.get((lib, n), []) if isinstance(x, float)]
        if len(vals) < len(results.get((lib, n), [])) or not vals:
            notes = [x for x in results.get((lib, n), [])
                     if not isinstance(x, float)]
            return None, notes[0] if notes else "-"
        return statistics.median(vals), ""

    print("\n# time per message of the whole job (ns, median of %d "
          "launches); in brackets: the ratio to the library's 2-rank figure"
          % args.repeats)
    print("| ranks | " + " | ".join(libs) + " |")
    print("|---|" + "---|" * len(libs))
    base = {lib: median(lib, ranks[0])[0] for lib in libs}
    for n in ranks:
        cells = []
        for lib in libs:
            v, note = median(lib, n)
            if v is None:
                cells.append(note)
            elif base[lib]:
                cells.append("%.0f (%.1fx)" % (v, v / base[lib]))
            else:
                cells.append("%.0f" % v)
        print("| %d | %s |" % (n, " | ".join(cells)))
    lo, hi = ranks[0], ranks[-1]
    print("\n# %d ranks / %d ranks, per message:" % (hi, lo))
    for lib in libs:
        a, b = median(lib, lo)[0], median(lib, hi)
        if a and b[0]:
            print("%-13s %.1fx" % (lib, b[0] / a))
        else:
            print("%-13s %s" % (lib, b[1] or "-"))
    print("# load at the end: %s" % loadavg())
    # a launch that failed (not one that was slow) fails the driver
    errors = [r for r in rows if r[4].startswith("error")]
    for r in errors:
        print("# error: %s n=%d: %s" % (r[0], r[1], r[4]))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
