#!/usr/bin/env python3
"""Builds and runs docs/TUTORIAL.md's program (ctest: docs.tutorial).

usage: run_tutorial.py TUTORIAL.md EXAMPLE.cpp BUILD_DIR WORK_DIR

The page's ```cpp blocks, in order and separated by one blank line, must
be EXAMPLE.cpp (examples/irpc.cpp) byte for byte: the page shows the
example, and the example is built and run by the other suites. The test
writes the blocks to WORK_DIR/irpc.cpp, installs BUILD_DIR into
WORK_DIR/prefix and runs the page's ```sh blocks there (pagerun.py): they
build the program against the install and run it with lcrun on 2 and on
4 ranks. Checks that every rank reported all messages intact. Prints
"N passed, N failed".
"""
import difflib
import os
import re
import sys

from pagerun import Checks, blocks, fresh_install, run_page_script


def main(argv):
    page, example, build, work = argv[1:5]
    text = open(page).read()
    program = "\n".join(blocks(text, "cpp"))
    expected = open(example).read()
    check = Checks()
    same = program == expected
    if not same:
        sys.stdout.writelines(difflib.unified_diff(
            expected.splitlines(True), program.splitlines(True),
            example, page + " (cpp blocks)"))
    check(same, "the page's cpp blocks are %s (diff above: change both)"
          % example)
    prefix = fresh_install(build, work)
    with open(os.path.join(work, "irpc.cpp"), "w") as f:
        f.write(program)
    sh = blocks(text, "sh")
    p = run_page_script(sh, work, prefix)
    check(len(sh) >= 2, "%d sh blocks on the page" % len(sh))
    check(p.returncode == 0, "the page's commands exit 0 (%d)" % p.returncode)
    lines = re.findall(r"^irpc: rank (\d)/(\d), 2 threads: received (\d+) "
                       r"messages, (\d+) bad, (\d+) missing$", p.stdout, re.M)
    ranks = sorted((int(n), int(r)) for r, n, _, _, _ in lines)
    check(ranks == [(2, 0), (2, 1), (4, 0), (4, 1), (4, 2), (4, 3)],
          "one line from each rank of the 2- and 4-rank runs: %s" % ranks)
    # 2 ranks: 2 threads x 20000 messages; 4 ranks: 2 x 5000
    check(all(int(got) == (40000 if n == "2" else 10000) and bad == "0"
              and miss == "0" for _, n, got, bad, miss in lines),
          "every rank received all messages intact")
    return check.report()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
