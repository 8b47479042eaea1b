#!/usr/bin/env python3
"""8-byte ping-pong: LCI (lci_latency --sizes 8 under lcrun) against raw
libfabric (fi_pingpong, same provider) in one run, alternating A B A B, with the
core-to-core probe (rawlimits c2c) before and after each pair. Prints one CSV
row per pair and the median ratio of half round-trip latencies
(fi_pingpong / lci: above 1 means LCI is faster).

usage: compare_pingpong.py --build DIR [--runs 5] [--iters 200000]
                           [--provider shm] [--rawlimits PATH]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time


def probe(rawlimits):
    if not rawlimits:
        return float("nan")
    out = subprocess.run([rawlimits, "c2c", "0.1"], capture_output=True,
                         text=True, timeout=60).stdout
    m = re.search(r"value=([0-9.]+)", out)
    return float(m.group(1)) if m else float("nan")


def run_fi(provider, iters):
    env = dict(os.environ, FI_TCP_IFACE="lo", FI_SOCKETS_IFACE="lo")
    args = ["fi_pingpong", "-p", provider, "-e", "rdm", "-S", "8", "-I",
            str(iters)]
    server = subprocess.Popen(args, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, env=env)
    try:
        time.sleep(0.3)
        client = subprocess.run(args + ["127.0.0.1"], capture_output=True,
                                text=True, timeout=120, env=env)
        server.wait(timeout=60)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    for line in client.stdout.splitlines():
        f = line.split()
        if len(f) >= 8 and f[0] == "8":
            return float(f[6])  # usec/xfer = half round trip
    raise RuntimeError("fi_pingpong printed no result:\n" + client.stdout +
                       client.stderr)


def run_lci(build, provider, iters):
    env = dict(os.environ, LCI_ATTR_OFI_PROVIDER_NAME=provider,
               FI_TCP_IFACE="lo", FI_SOCKETS_IFACE="lo")
    env.setdefault("LCI_ATTR_BACKEND", "ofi")  # the provider is libfabric's
    out = subprocess.run(
        [os.path.join(build, "tools/lcrun/lcrun"), "-n", "2", "--timeout",
         "120", os.path.join(build, "benchmarks/lci_latency"), "--sizes", "8",
         "--iters", str(iters), "--warmup", str(max(1, iters // 10)),
         "--runs", "1"], capture_output=True, text=True, timeout=150, env=env)
    header = None
    for line in out.stdout.splitlines():
        if line.startswith("benchmark,"):
            header = line.split(",")
        elif header and line.startswith("latency,lci"):
            return float(line.split(",")[header.index("median")])
    raise RuntimeError("lci_latency printed no result:\n" + out.stdout +
                       out.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--iters", type=int, default=200000)
    ap.add_argument("--provider", default="shm")
    ap.add_argument("--rawlimits", default="")
    a = ap.parse_args()
    print("pair,probe_before_ns,fi_half_rtt_us,lci_half_rtt_us,"
          "probe_after_ns,ratio_fi_over_lci")
    ratios = []
    for i in range(a.runs):
        before = probe(a.rawlimits)
        fi = run_fi(a.provider, a.iters)
        lci = run_lci(a.build, a.provider, a.iters)
        after = probe(a.rawlimits)
        r = fi / lci
        ratios.append(r)
        print("%d,%.0f,%.3f,%.3f,%.0f,%.3f" % (i, before, fi, lci, after, r))
    print("median ratio (fi_pingpong half-RTT / LCI half-RTT): %.3f "
          "(min %.3f, max %.3f)" % (statistics.median(ratios), min(ratios),
                                    max(ratios)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
