#!/usr/bin/env python3
"""Fails when a committed generated page differs from its generator's output.

usage: check_generated.py PAGE OUT FIX COMMAND...

Runs COMMAND with OUT appended (the generator writes OUT), compares OUT
with PAGE, and on a difference prints the start of a unified diff and FIX,
the command that regenerates PAGE (run from the source tree).
"""
import difflib
import os
import subprocess
import sys


def main(argv):
    if len(argv) < 5:
        sys.stderr.write(__doc__)
        return 2
    page, out, fix, cmd = argv[1], argv[2], argv[3], argv[4:]
    if os.path.exists(out):
        os.remove(out)
    subprocess.run(cmd + [out], check=True)
    want = open(out).read()
    have = open(page).read() if os.path.exists(page) else ""
    if want == have:
        print("%s is current" % page)
        return 0
    diff = list(difflib.unified_diff(have.splitlines(True),
                                     want.splitlines(True),
                                     page + " (committed)",
                                     page + " (generated now)"))
    sys.stdout.writelines(diff[:200])
    print("FAIL: %s is stale; regenerate it with: %s" % (page, fix))
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
