#!/usr/bin/env python3
"""Runs docs/QUICKSTART.md's command blocks (ctest: docs.quickstart).

usage: run_quickstart.py QUICKSTART.md BUILD_DIR WORK_DIR

Installs BUILD_DIR into WORK_DIR/prefix (the page's install step, which
builds LCI from scratch, is the one block not run: the suite has built it
already), then runs every ```sh block of the page, in order, in one bash
with LCI_PREFIX set to that prefix, inside a loopback-only network
namespace (tools/lo-netns: the launchers' control ports stay on this
machine). Checks that each launcher's run printed one line per rank.
Prints "N passed, N failed".
"""
import os
import re
import shutil
import subprocess
import sys


def main(argv):
    page, build, work = argv[1], argv[2], argv[3]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    prefix = os.path.join(work, "prefix")
    subprocess.run(["cmake", "--install", build, "--prefix", prefix],
                   check=True, stdout=subprocess.DEVNULL)
    text = open(page).read()
    blocks = re.findall(r"^```sh\n(.*?)^```", text, re.S | re.M)
    script = "set -euxo pipefail\n" + "\n".join(blocks)
    here = os.path.dirname(os.path.abspath(__file__))
    netns = os.path.join(here, "..", "..", "tools", "lo-netns")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PMI", "LCI_", "OMPI_", "SLURM_"))}
    env["LCI_PREFIX"] = prefix
    env["MPIEXEC_TIMEOUT"] = "60"
    p = subprocess.run([netns, "bash", "-c", script], cwd=work, env=env,
                       capture_output=True, text=True, timeout=600)
    sys.stdout.write(p.stdout)
    sys.stdout.write(p.stderr[-20000:])
    passed = failed = 0

    def check(cond, what):
        nonlocal passed, failed
        if cond:
            passed += 1
        else:
            failed += 1
            print("FAIL: " + what)

    check(len(blocks) >= 6, "%d sh blocks on the page" % len(blocks))
    check(p.returncode == 0, "the page's commands exit 0 (%d)" % p.returncode)
    ok = re.findall(r"^rank (\d) of 4 received (\d)$", p.stdout, re.M)
    # lcrun, mpiexec and mpirun: 4 lines each, every rank hearing rank - 1
    check(len(ok) == 12, "%d 'rank R of 4 received' lines, expected 12"
          % len(ok))
    check(all(int(b) == (int(a) + 3) % 4 for a, b in ok),
          "each rank received its left neighbour's rank")
    check("all checks passed" in p.stdout, "lci_info --check passed")
    check(re.search(r"lci\[\d\] info: network backend", p.stderr) is not None,
          "LCI_LOG_LEVEL=info showed the backend")
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
