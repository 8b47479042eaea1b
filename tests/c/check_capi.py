#!/usr/bin/env python3
"""Checks of the C interface against src/api/spec.py.

usage: check_capi.py coverage SPEC_DIR HEADER TEST.c...
         every operation of the spec has its C form in HEADER (the generated
         lci_c_binding.h) and is called in one of the C tests
       check_capi.py header SPEC_DIR INCLUDE_DIR... -- COMPILER ARGS...
         writes a C file that uses lci.h (every args struct with its INIT
         macro, the address of every operation) and compiles it with
         COMPILER ARGS... (e.g. cc -std=c99 -Wall -Wextra -pedantic -Werror)

Prints one line per failure and ends with "N passed, N failed".
"""
import os
import re
import subprocess
import sys
import tempfile


def load_spec(spec_dir):
    sys.path.insert(0, spec_dir)
    import spec  # noqa: E402
    import gen  # noqa: E402
    return spec, gen


def has_args(gen, o):
    positional, optional = gen.expanded_args(o)
    return bool(optional or o.attrs_of)


def coverage(spec_dir, header, tests):
    spec, gen = load_spec(spec_dir)
    htext = open(header).read()
    ttext = "\n".join(re.sub(r"/\*.*?\*/", "", open(t).read(), flags=re.S)
                      for t in tests)
    passed = failed = 0
    for o in spec.OPS:
        checks = [
            (re.search(r"\blci_error_t lci_%s\(" % o.name, htext),
             "lci_%s is not declared in %s" % (o.name, header)),
            (re.search(r"\blci_%s\(" % o.name, ttext),
             "lci_%s is never called by the C tests" % o.name),
        ]
        if has_args(gen, o):
            checks.append((re.search(r"\blci_%s_args_t\b" % o.name, htext)
                           and "LCI_%s_ARGS_INIT" % o.name.upper() in htext,
                           "lci_%s_args_t or its INIT macro is missing"
                           % o.name))
        for ok, what in checks:
            if ok:
                passed += 1
            else:
                failed += 1
                print("FAIL: " + what)
    for n in gen.HANDLES:
        for a in gen.resource(n).attrs:
            f = "lci_%s_get_attr_%s" % (n, a.name)
            if re.search(r"\b%s\(" % f, htext):
                passed += 1
            else:
                failed += 1
                print("FAIL: %s is not declared" % f)
    return passed, failed


def header(spec_dir, includes, cmd):
    spec, gen = load_spec(spec_dir)
    lines = ["#include <lci.h>\n", "int main(void)\n{\n"]
    for o in spec.OPS:
        if has_args(gen, o):
            lines.append("  lci_%s_args_t a_%s = LCI_%s_ARGS_INIT;\n"
                         % (o.name, o.name, o.name.upper()))
            lines.append("  (void)a_%s;\n" % o.name)
        lines.append("  (void)&lci_%s;\n" % o.name)
    lines.append("  (void)&lci_error_string;\n  return 0;\n}\n")
    fd, path = tempfile.mkstemp(suffix=".c", prefix="lci_h_check_")
    with os.fdopen(fd, "w") as f:
        f.write("".join(lines))
    try:
        argv = cmd + ["-fsyntax-only"] + ["-I" + i for i in includes] + [path]
        print("+ " + " ".join(argv))
        r = subprocess.run(argv)
    finally:
        os.unlink(path)
    return (1, 0) if r.returncode == 0 else (0, 1)


def main(argv):
    if len(argv) >= 5 and argv[1] == "coverage":
        passed, failed = coverage(argv[2], argv[3], argv[4:])
    elif len(argv) >= 5 and argv[1] == "header" and "--" in argv:
        sep = argv.index("--")
        passed, failed = header(argv[2], argv[3:sep], argv[sep + 1:])
    else:
        sys.stderr.write(__doc__)
        return 2
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
