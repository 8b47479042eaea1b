#!/usr/bin/env python3
"""Checks benchmarks/compare's launch handling (run_launch) with stand-in
programs: a launch that prints its result rows and then never exits (as
MPICH's ranks do when they hang in MPI_Finalize) is killed after --linger
seconds with its rows kept; one that never prints them times out; one that
exits normally is waited for; a launch gets /dev/null as its stdin.

  compare_launch.py PATH/TO/benchmarks/compare
"""
import importlib.machinery
import importlib.util
import sys
import time
import types

ROWS = "echo benchmark,library,median; echo latency,x,1.5"


def load(path):
    loader = importlib.machinery.SourceFileLoader("compare_driver", path)
    spec = importlib.util.spec_from_loader("compare_driver", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def check(cond, what):
    if not cond:
        print("FAIL: " + what)
        sys.exit(1)
    print("ok: " + what)


def main():
    drv = load(sys.argv[1])
    a = types.SimpleNamespace(linger=1, timeout=-28, hosts=None)  # 2 s

    t0 = time.monotonic()
    out, _, status, lingered = drv.run_launch(
        a, ["sh", "-c", ROWS + "; sleep 600"], None)
    took = time.monotonic() - t0
    check(lingered and "latency,x,1.5" in out and took < 30,
          "rows then no exit: killed after the linger time, rows kept "
          "(%.1f s)" % took)

    t0 = time.monotonic()
    try:
        drv.run_launch(a, ["sh", "-c", "echo benchmark,a,b; sleep 600"], None)
        check(False, "no rows: a timeout")
    except RuntimeError as e:
        check("timed out" in str(e) and time.monotonic() - t0 < 30,
              "no rows and no exit: a timeout")

    out, _, status, lingered = drv.run_launch(
        a, ["sh", "-c", ROWS + "; exit 3"], None)
    check(not lingered and status == 3 and "latency,x,1.5" in out,
          "an exit after the rows: waited for, its status kept")

    out, _, status, lingered = drv.run_launch(
        a, ["sh", "-c", "cat; " + ROWS], None)
    check(status == 0 and not lingered and out.startswith("benchmark,"),
          "stdin is /dev/null (a program reading it ends)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
