#!/usr/bin/env python3
"""One launch of a peer library's own benchmark tool, for benchmarks/compare,
printed as a row of our benchmarks' CSV.

  peer_tools.py ucx --bench latency --size 8 --iters N --warmup N [--pin]
  peer_tools.py fi  --bench latency|bandwidth --size S --iters N [--pin]

ucx: UCX's `ucx_perftest -t tag_lat` (UCP tag matching, node-local
transports), its overall latency (total time / iterations, half a round
trip). fi: libfabric's `fi_pingpong -p shm -e rdm` (fabtests), its
usec/xfer (half a round trip) or MB/sec (bytes moved both ways / time,
1 MB = 1e6 B: a ping-pong, not a stream with a window).

Both tools start an out-of-band TCP server that listens on every
interface. To keep all traffic on this machine's loopback, the server and
the client run inside a private network namespace whose only interface is
lo (tools/lo-netns, required: no fallback to the host's network). --pin puts the server on CPU 0 and the client on
CPU 1, like our benchmarks' --pin.
"""
import argparse
import os
import re
import subprocess
import sys
import time

HEADER = ("benchmark,library,mode,processes,threads,size,iterations,median,"
          "min,max,unit,op,window,protocol")


def tool_argv(a, server):
    if a.lib == "ucx":
        argv = ["ucx_perftest", "-t", "tag_lat", "-s", str(a.size), "-n",
                str(a.iters), "-w", str(a.warmup), "-f"]
        if a.pin:
            argv += ["-c", "0" if server else "1"]
        if not server:
            argv.insert(1, "127.0.0.1")
        return argv
    argv = ["fi_pingpong", "-p", "shm", "-e", "rdm", "-I", str(a.iters),
            "-S", str(a.size)]
    if not server:
        argv.append("127.0.0.1")
    if a.pin:
        argv = ["taskset", "-c", "0" if server else "1"] + argv
    return argv


def parse(a, out):
    """(value, unit) from the client's output, or None."""
    nums = []
    for line in out.splitlines():
        fields = line.split()
        # a row of numbers (fi_pingpong abbreviates sizes: 1m, 4k)
        if len(fields) >= 8 and re.match(r"^[0-9]+[kmg]?$", fields[0]):
            nums.append(fields)
    if not nums:
        return None
    last = nums[-1]
    if a.lib == "ucx":
        # iterations, latency 50%ile / average / overall (us), ...
        return float(last[3]), "us"
    # bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec
    if a.bench == "latency":
        return float(last[6]), "us"
    return float(last[5]), "MB/s"


def inside(a):
    """In the namespace: server, client, the row."""
    server = subprocess.Popen(tool_argv(a, True), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    out, ok, rc = "", False, None
    try:
        for _ in range(50):  # until the server listens
            time.sleep(0.1)
            c = subprocess.run(tool_argv(a, False), capture_output=True,
                               text=True, timeout=a.timeout)
            out = c.stdout + c.stderr
            rc = c.returncode
            if c.returncode == 0:
                ok = True
                break
            if server.poll() is not None:
                break
    finally:
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    got = parse(a, out) if ok else None
    if got is None:
        print("# error: %s failed (status %s): %s" % (
            " ".join(tool_argv(a, False)), rc, out.strip()[-400:]))
        return 1
    value, unit = got
    print(HEADER)
    print("%s,%s,process,2,1,%d,%d,%.6g,%.6g,%.6g,%s,sendrecv,1,%s" % (
        a.bench, a.lib, a.size, a.iters, value, value, value, unit,
        "tag" if a.lib == "ucx" else "pingpong"))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("lib", choices=["ucx", "fi"])
    ap.add_argument("--bench", choices=["latency", "bandwidth"],
                    default="latency")
    ap.add_argument("--size", type=int, default=8)
    ap.add_argument("--iters", type=int, default=100000)
    ap.add_argument("--warmup", type=int, default=1000)
    ap.add_argument("--pin", action="store_true")
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("--in-netns", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.lib == "ucx" and a.bench != "latency":
        ap.error("ucx: only --bench latency (tag_lat)")
    if a.in_netns:
        return inside(a)
    here = os.path.dirname(os.path.abspath(__file__))
    netns = os.path.join(os.path.dirname(here), "tools", "lo-netns")
    argv = [netns, sys.executable, os.path.abspath(__file__),
            "--in-netns"] + sys.argv[1:]
    env = dict(os.environ, LCI_NETNS="require")
    return subprocess.run(argv, env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
