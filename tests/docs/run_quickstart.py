#!/usr/bin/env python3
"""Runs docs/QUICKSTART.md's command blocks (ctest: docs.quickstart).

usage: run_quickstart.py QUICKSTART.md BUILD_DIR WORK_DIR

Installs BUILD_DIR into WORK_DIR/prefix (the page's install step, which
builds LCI from scratch, is the one block not run: the suite has built it
already), then runs every ```sh block of the page, in order, in one bash
with LCI_PREFIX set to that prefix, inside a loopback-only network
namespace (pagerun.py). Checks that each launcher's run printed one line
per rank. Prints "N passed, N failed".
"""
import re
import sys

from pagerun import Checks, blocks, fresh_install, run_page_script


def main(argv):
    page, build, work = argv[1], argv[2], argv[3]
    prefix = fresh_install(build, work)
    sh = blocks(open(page).read(), "sh")
    p = run_page_script(sh, work, prefix)
    check = Checks()
    check(len(sh) >= 6, "%d sh blocks on the page" % len(sh))
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
    return check.report()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
