#!/usr/bin/env python3
"""Collective latency with more ranks than cores, launch by launch: our
builds (and Open MPI) alternated A B C A B C, each launch's median time
per call (lci_coll / mpi_coll_openmpi, as compare_coll.py launches them)
together with what the scheduler did in that launch: the 1-minute load
and the core-to-core probe before it, the sched_yield calls, context
switches and migrations of the whole launch (perf stat), and where the
ranks ran (the cores of the ranks, sorted, sampled every 2 ms; a fast
launch's samples are mostly its start-up). Appends one CSV row per launch
and size to --out and prints it.

usage: coll_sched_ab.py --out FILE [--ranks 4] [--rounds 5]
                        [--colls barrier,allreduce] [--sizes 8]
                        --variant NAME=BUILD_DIR[:VAR=VALUE,...] ...
                        [--variant NAME=openmpi] [--mpi-build DIR]
                        [--pin one|split]
--pin one holds every rank on core 0, --pin split rank r on core r % 2
(taskset). The probe is ../shared/tools/rawlimits.c built as
/tmp/rawlimits (`rawlimits c2c 0.05`); without it the column is -1.
"""
import argparse
import collections
import csv
import io
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_coll  # noqa: E402

PIN = ("r=${PMI_RANK:-${OMPI_COMM_WORLD_RANK:-0}}; "
       "case $PIN in one) c=0;; *) c=$((r % 2));; esac; "
       "exec taskset -c $c \"$@\"")


def probe():
    try:
        p = subprocess.run(["/tmp/rawlimits", "c2c", "0.05"],
                           capture_output=True, text=True)
    except OSError:
        return -1
    for t in p.stdout.split():
        if t.startswith("value="):
            return float(t[6:])
    return -1


def stat(pid):
    return open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()


def run_sampled(cmd, env, name, ranks):
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env)
    samples = collections.Counter()
    pids = []

    def mine(x):
        try:
            for _ in range(8):
                x = int(stat(x)[1])
                if x == p.pid:
                    return True
        except (OSError, ValueError, IndexError):
            pass
        return False
    while p.poll() is None:
        if len(pids) < ranks:
            found = subprocess.run(["pgrep", "-x", name[:15]],
                                   capture_output=True, text=True)
            pids = sorted(int(x) for x in found.stdout.split()
                          if mine(int(x)))
            time.sleep(0.003)
            continue
        try:
            cores = tuple(sorted(int(stat(x)[36]) for x in pids))
        except (OSError, ValueError, IndexError):
            break
        samples[cores] += 1
        time.sleep(0.002)
    out, err = p.communicate()
    total = sum(samples.values()) or 1
    place = " ".join("%s:%d%%" % ("".join(map(str, k)), 100 * v // total)
                     for k, v in samples.most_common(3))
    return p.returncode, out, err, place


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--colls", default="barrier,allreduce")
    ap.add_argument("--sizes", default="8")
    ap.add_argument("--iters", type=int, default=1000)
    ap.add_argument("--variant", action="append", default=[])
    ap.add_argument("--pin", choices=["one", "split"])
    ap.add_argument("--mpi-build", help="the build whose mpi_coll_openmpi "
                    "runs (default: the first variant's)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    variants = []
    for v in a.variant:
        name, rest = v.split("=", 1)
        build, _, envs = rest.partition(":")
        variants.append((name, build,
                         [kv.split("=", 1) for kv in envs.split(",") if kv]))
    perf_out = a.out + ".perf"
    f = open(a.out, "a")
    w = csv.writer(f)
    if f.tell() == 0:
        w.writerow(["round", "load1", "probe_ns", "variant", "ranks", "coll",
                    "size", "median_us", "min_us", "max_us", "yields",
                    "cswitches", "migrations", "placement"])
    mpi_build = a.mpi_build or next(
        (b for _, b, _ in variants if b != "openmpi"), None)
    for r in range(a.rounds):
        for coll in a.colls.split(","):
            for name, build, envs in variants:
                lib = "openmpi" if build == "openmpi" else "lci"
                ns = argparse.Namespace(
                    build=mpi_build if lib == "openmpi" else build,
                    sizes=a.sizes, iters=a.iters, backend=None)
                cmd, env = compare_coll.command(ns, lib, coll, "none",
                                                a.ranks)
                prog = "mpi_coll_openmpi" if lib == "openmpi" else "lci_coll"
                if a.pin:
                    env["PIN"] = a.pin
                    i = [j for j, x in enumerate(cmd) if x.endswith(prog)][0]
                    cmd = cmd[:i] + ["sh", "-c", PIN, "pin"] + cmd[i:]
                for k, v in envs:
                    env[k] = v
                cmd = ["perf", "stat", "-x,", "-o", perf_out, "-e",
                       "syscalls:sys_enter_sched_yield,context-switches,"
                       "cpu-migrations", "--"] + cmd
                load = open("/proc/loadavg").read().split()[0]
                pr = probe()
                rc, out, err, place = run_sampled(cmd, env, prog, a.ranks)
                if rc:
                    print("FAILED", name, coll, err[-500:], file=sys.stderr)
                    continue
                counts = {}
                for line in open(perf_out):
                    x = line.strip().split(",")
                    if len(x) > 2 and x[0].isdigit():
                        counts[x[2]] = int(x[0])
                pc = [counts.get("syscalls:sys_enter_sched_yield", -1),
                      counts.get("context-switches", -1),
                      counts.get("cpu-migrations", -1)]
                rows = csv.DictReader(io.StringIO("\n".join(
                    l for l in out.splitlines() if not l.startswith("#"))))
                for row in rows:
                    rec = [r, load, "%.0f" % pr, name, a.ranks, coll,
                           row["size"], row["median"], row["min"],
                           row["max"]] + pc + [place]
                    w.writerow(rec)
                    print(",".join(map(str, rec)), flush=True)
                f.flush()
    os.unlink(perf_out)


if __name__ == "__main__":
    main()
