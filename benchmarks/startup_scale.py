#!/usr/bin/env python3
"""Bootstrap scale: time from launching a job to the end of g_runtime_init
on its slowest rank, for N ranks on this machine (oversubscribed), under
lcrun, MPICH's mpiexec.hydra and Open MPI's mpirun. Runs lci_startup
(benchmarks/startup.cpp) REPEAT times per point and prints, per launcher and
N, the median over runs of:
  launch->init  the slowest rank's time from just before the launcher is
                started to the end of its g_runtime_init (includes the
                launcher's own start and every exec);
  init max/med  g_runtime_init alone (from main), slowest and median rank;
  device max    one more alloc_device (endpoint + one address allgather +
                one barrier), slowest rank: the part that grows with N.
N=1 is the baseline without peers (the launcher's own cost and the
network context, which does not depend on N).

usage: startup_scale.py --build DIR [--ranks 1,2,8,32,64] [--repeat 3]
                        [--launchers lcrun,hydra,mpirun] [--provider shm]
Everything stays on this machine (shm provider, launchers on loopback).
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

# MPI launchers run in a private loopback-only network namespace (their
# control ports listen on every interface)
NETNS = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "tools", "lo-netns")

LINE = re.compile(r"^startup: rank (\d+) of (\d+) bootstrap (\S+) "
                  r"launch_to_init_us (-?\d+) init_us (-?\d+) "
                  r"device_us (-?\d+)$", re.M)


def command(launcher, build, n):
    prog = os.path.join(build, "benchmarks", "lci_startup")
    if launcher == "lcrun":
        return [os.path.join(build, "tools", "lcrun", "lcrun"), "-n", str(n),
                "--timeout", "300", prog]
    if launcher == "hydra":
        return [NETNS, "/usr/bin/mpiexec.hydra", "-iface", "lo", "-n", str(n),
                prog]
    if launcher == "mpirun":
        root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
        return ([NETNS, "/usr/bin/mpirun.openmpi"] + root +
                ["--oversubscribe", "--bind-to", "none", "--mca",
                 "oob_tcp_if_include", "lo", "-n", str(n), prog])
    raise ValueError(launcher)


def run_once(launcher, build, n, provider):
    env = dict(os.environ, LCI_ATTR_OFI_PROVIDER_NAME=provider,
               MPIEXEC_TIMEOUT="300")
    env.setdefault("LCI_ATTR_BACKEND", "ofi")  # the provider is libfabric's
    for var in ("PMI_FD", "PMI_PORT", "PMI_RANK", "PMI_SIZE", "PMI_ID",
                "PMIX_RANK", "PMIX_NAMESPACE", "LCI_ATTR_BOOTSTRAP_BACKEND"):
        env.pop(var, None)
    env["LCI_BENCH_T0_NS"] = str(time.time_ns())
    out = subprocess.run(command(launcher, build, n), env=env, text=True,
                         capture_output=True, timeout=400)
    rows = LINE.findall(out.stdout)
    if out.returncode != 0 or len(rows) != n:
        sys.exit("%s -n %d failed (status %d, %d of %d ranks reported):\n%s%s"
                 % (launcher, n, out.returncode, len(rows), n, out.stdout,
                    out.stderr))
    backend = rows[0][2]
    launch = max(int(r[3]) for r in rows) / 1000.0
    inits = [int(r[4]) / 1000.0 for r in rows]
    device = max(int(r[5]) for r in rows) / 1000.0
    return backend, launch, max(inits), statistics.median(inits), device


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--ranks", default="1,2,8,32,64")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--launchers", default="lcrun,hydra,mpirun")
    ap.add_argument("--provider", default="shm")
    args = ap.parse_args()
    print("launcher,backend,ranks,launch_to_init_ms,init_max_ms,"
          "init_median_ms,device_max_ms")
    for launcher in args.launchers.split(","):
        exe = command(launcher, args.build, 1)[0]
        if not shutil.which(exe):
            print("# %s: %s not found, skipped" % (launcher, exe))
            continue
        for n in [int(x) for x in args.ranks.split(",")]:
            runs = [run_once(launcher, args.build, n, args.provider)
                    for _ in range(args.repeat)]
            print("%s,%s,%d,%.1f,%.1f,%.1f,%.1f" % (
                launcher, runs[0][0], n,
                statistics.median(r[1] for r in runs),
                statistics.median(r[2] for r in runs),
                statistics.median(r[3] for r in runs),
                statistics.median(r[4] for r in runs)), flush=True)


if __name__ == "__main__":
    main()
