"""What the page tests (run_quickstart.py, run_tutorial.py) share.

A page's code blocks are fenced with a language name (```sh, ```cpp);
blocks(text, lang) returns the bodies of one language, in page order.
run_page_script runs shell lines against a scratch install of the build:
WORK/prefix, with LCI_PREFIX pointing at it, inside a loopback-only
network namespace (tools/lo-netns: launchers' control ports stay on this
machine), with no launcher or LCI variables inherited from the caller.
"""
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def blocks(text, lang):
    return re.findall(r"^```%s\n(.*?)^```" % re.escape(lang), text,
                      re.S | re.M)


def fresh_install(build, work):
    """Empty WORK, install BUILD into WORK/prefix; returns the prefix."""
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    prefix = os.path.join(work, "prefix")
    subprocess.run(["cmake", "--install", build, "--prefix", prefix],
                   check=True, stdout=subprocess.DEVNULL)
    return prefix


def run_page_script(lines, work, prefix, timeout=600):
    """Runs LINES in one `bash -euxo pipefail` in WORK; echoes its output
    (the tail of stderr) and returns the CompletedProcess."""
    script = "set -euxo pipefail\n" + "\n".join(lines)
    netns = os.path.join(HERE, "..", "..", "tools", "lo-netns")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PMI", "LCI_", "OMPI_", "SLURM_"))}
    env["LCI_PREFIX"] = prefix
    env["MPIEXEC_TIMEOUT"] = "60"
    p = subprocess.run([netns, "bash", "-c", script], cwd=work, env=env,
                       capture_output=True, text=True, timeout=timeout)
    sys.stdout.write(p.stdout)
    sys.stdout.write(p.stderr[-20000:])
    return p


class Checks:
    """Counts checks; report() prints "N passed, N failed" and returns the
    exit status."""

    def __init__(self):
        self.passed = self.failed = 0

    def __call__(self, cond, what):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL: " + what)

    def report(self):
        print("%d passed, %d failed" % (self.passed, self.failed))
        return 1 if self.failed else 0
