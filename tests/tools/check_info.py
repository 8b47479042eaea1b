#!/usr/bin/env python3
"""Checks lci_info against src/api/spec.py (ctest: tools.lci_info).

usage: check_info.py LCI_INFO SPEC_DIR

- every attribute of the spec is listed once, with its default and variable;
- a variable set in the environment shows as the current value;
- the bootstrap choice follows the launcher variables, and inconsistent
  ones are reported, not hidden;
- the backends built in are listed (socket always; without ofi: why
  not), the shm
  provider is usable when ofi is built in, and --check passes here;
- a bad option is refused with the usage and status 2.
Prints "N passed, N failed" and exits non-zero on a failure.
"""
import json
import os
import subprocess
import sys

passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL: " + what)


def run(argv, env_extra=None, drop=()):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PMI", "LCI_ATTR_", "OMPI_", "SLURM_"))
           and k not in drop}
    env.update(env_extra or {})
    return subprocess.run(argv, env=env, capture_output=True, text=True,
                          timeout=120)


def main(argv):
    info, spec_dir = argv[1], argv[2]
    sys.path.insert(0, spec_dir)
    import spec  # noqa: E402

    p = run([info, "--json"], {"LCI_ATTR_SHM_RING_SIZE": "524288"})
    check(p.returncode == 0, "lci_info --json exits 0 (%d: %s)"
          % (p.returncode, p.stderr))
    d = json.loads(p.stdout)
    listed = {(a["resource"], a["name"]): a for a in d["attributes"]}
    want = [(r.name, a) for r in spec.RESOURCES for a in r.attrs]
    check(len(d["attributes"]) == len(want),
          "%d attributes listed, the spec has %d"
          % (len(d["attributes"]), len(want)))
    for res, a in want:
        got = listed.get((res, a.name))
        check(got is not None, "attribute %s.%s listed" % (res, a.name))
        if got is None:
            continue
        check(got["env"] == "LCI_ATTR_" + a.name.upper(),
              "%s's variable is %s" % (a.name, got["env"]))
        default = a.default
        if a.type == "bool":
            default = "true" if a.default else "false"
        elif a.type == "uint64_t":
            default = hex(a.default)
        check(got["default"] == str(default),
              "%s's default %s, spec %s" % (a.name, got["default"], default))
    ring = listed[("runtime", "shm_ring_size")]
    check(ring["current"] == "524288" and ring["from_env"],
          "LCI_ATTR_SHM_RING_SIZE from the environment is the current value")
    check(d["version"].startswith("2."), "version %s" % d["version"])
    check(d["bootstrap_here"].startswith("local"),
          "no launcher variables: local (%s)" % d["bootstrap_here"])
    check(d["network_backends"][0] == "shm",
          "native shm built in, first (%s)" % d["network_backends"])
    if "ofi" in d["network_backends"]:
        check("hybrid" in d["network_backends"] and d["libfabric"],
              "ofi: hybrid and the libfabric version listed")
        shm = [x for x in d["providers"] if x["name"] == "shm"]
        check(len(shm) == 1 and shm[0]["usable"], "libfabric shm usable")
    else:
        # a build without libfabric (LCI_WITH_OFI OFF): nothing to probe,
        # native shm, socket and hybrid, and it says why ofi is missing
        missing = d["backends_not_built"]
        check(d["network_backends"] == ["shm", "socket", "hybrid"]
              and d["libfabric"] is None and d["providers"] == [],
              "without ofi: shm, socket, hybrid, no libfabric, no providers")
        check("LCI_WITH_OFI" in missing.get("ofi", "")
              and "hybrid" not in missing,
              "without ofi: the reason is listed (%s)" % missing)

    p = run([info, "--json"], {"PMI_PORT": "127.0.0.1:1"})
    d = json.loads(p.stdout)
    check(d["bootstrap_here"].startswith("none")
          and "PMI_PORT" in d["bootstrap_here"],
          "PMI_PORT without PMI_ID is reported (%s)" % d["bootstrap_here"])
    p = run([info, "--json"], {"PMIX_RANK": "0", "PMIX_NAMESPACE": "x"})
    check(json.loads(p.stdout)["bootstrap_here"].startswith("pmix"),
          "PMIx variables select pmix")

    p = run([info, "--check"])
    check(p.returncode == 0 and "all checks passed" in p.stdout,
          "lci_info --check passes here:\n" + p.stdout + p.stderr)
    p = run([info, "--check", "--json"])
    d = json.loads(p.stdout)
    check(d["ok"] and all(s["ok"] for s in d["self_test"])
          and len(d["self_test"]) >= 4, "--check --json reports every step")
    p = run([info, "--check"], {"LCI_ATTR_BACKEND": "bogus"})
    check(p.returncode == 1 and "problem: self-test step" in p.stdout,
          "--check fails on a bad LCI_ATTR_BACKEND:\n" + p.stdout)

    p = run([info, "--no-such-option"])
    check(p.returncode == 2 and "usage: lci_info" in p.stderr,
          "a bad option is refused with the usage")
    p = run([info, "--version"])
    check(p.returncode == 0 and p.stdout.startswith("lci_info (LCI) 2."),
          "--version")
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
