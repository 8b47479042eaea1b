#!/usr/bin/env python3
"""Checks that the #include lines of src/ follow the layers of the library.

Usage: check_layering.py SRC_DIR      check the tree, exit 1 on a violation
       check_layering.py --self-test  check that the checker catches an
                                      upward include (on a made-up tree)

The rule (docs/ARCHITECTURE.md, "Layers"): each directory of src/ is in one
layer, and a file may include headers of its own directory and of lower
layers, never of a higher layer or of another directory of its own layer.
Only includes of the form "DIR/..." with DIR a directory of src/ are
checked; the public headers (lci.hpp, lci.h, lct.h), the generated binding,
system headers and headers named without a directory (the file's own
directory) are below every layer. A relative include ("../x.hpp") is an
error: it would hide the layer it reaches.

A directory of src/ holding C++ files that no layer names is an error too,
so that a new directory is placed in a layer when it is made.
"""

import os
import re
import shutil
import sys
import tempfile

# Lowest first. The order of a message: the public API entry points (capi,
# and lct, the LCT compatibility layer) call the collectives (coll) and
# the core (core: post, protocol, progress); the core signals completion
# objects (comp: passive structures the core fills in on its fast path,
# inline) and uses the resources (resource: runtime, device, packet pool,
# matching engine, registrations); resources hold the network backends
# (net) and the process-manager connection (bootstrap); util is below all.
LAYERS = [
    ("util",),
    ("bootstrap", "net"),
    ("resource",),
    ("comp",),
    ("core",),
    ("coll",),
    ("capi", "lct"),
]

# Directories with no C++ code (the API specification and its generators).
NOT_CODE = {"api"}

# Upward includes that must remain for now: (including file, included
# header) -> why. Each entry is checked to still exist, so a fixed one has
# to be removed from this list. None today.
ALLOWED = {}

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
SOURCE_EXT = (".cpp", ".hpp", ".h", ".c", ".cc")


def rank_of():
    ranks = {}
    for i, dirs in enumerate(LAYERS):
        for d in dirs:
            ranks[d] = i
    return ranks


def check(src):
    ranks = rank_of()
    errors = []
    used = set()
    for top in sorted(os.listdir(src)):
        top_path = os.path.join(src, top)
        if not os.path.isdir(top_path) or top in NOT_CODE:
            continue
        for root, _, files in os.walk(top_path):
            for name in sorted(files):
                if not name.endswith(SOURCE_EXT):
                    continue
                path = os.path.join(root, name)
                rel = os.path.relpath(path, src)
                if top not in ranks:
                    errors.append(f"{rel}: directory src/{top} is in no "
                                  "layer (add it to LAYERS)")
                    break
                with open(path, encoding="utf-8", errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        inc = m.group(1)
                        where = f"{rel}:{lineno}: #include \"{inc}\""
                        if inc.startswith("."):
                            errors.append(f"{where}: relative include; name "
                                          "the directory under src/")
                            continue
                        target = inc.split("/", 1)[0] if "/" in inc else None
                        if target is None or target not in ranks:
                            continue  # public, generated, system, sibling
                        if target == top:
                            continue
                        if (rel, inc) in ALLOWED:
                            used.add((rel, inc))
                            continue
                        if ranks[target] > ranks[top]:
                            errors.append(f"{where}: {top} may not include "
                                          f"{target} (a higher layer)")
                        elif ranks[target] == ranks[top]:
                            errors.append(f"{where}: {top} may not include "
                                          f"{target} (same layer)")
    for edge in sorted(set(ALLOWED) - used):
        errors.append(f"{edge[0]}: allowed include of {edge[1]} is gone: "
                      "remove it from ALLOWED in check_layering.py")
    return errors


def self_test():
    """The checker must reject an upward include and accept the fixed tree."""
    tmp = tempfile.mkdtemp(prefix="lci-layering-")
    try:
        def write(rel, text):
            path = os.path.join(tmp, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        for (rel, inc) in ALLOWED:  # the allowed edges, present
            write(rel, f'#include "{inc}"\n')
        write("util/a.hpp", "#pragma once\n")
        write("resource/r.cpp",
              '#include "util/a.hpp"\n#include "lci.hpp"\n')
        write("core/c.cpp", '#include "resource/r.hpp"\n')
        ok = check(tmp)
        if ok:
            print("self-test: a correct tree was rejected:", *ok, sep="\n  ")
            return 1
        write("resource/r.cpp", '#include "core/progress.hpp"\n')
        bad = check(tmp)
        if not any("resource/r.cpp:1" in e and "higher layer" in e
                   for e in bad):
            print("self-test: an upward include was not caught:", bad)
            return 1
        write("resource/r.cpp", '#include "../core/progress.hpp"\n')
        if not any("relative include" in e for e in check(tmp)):
            print("self-test: a relative include was not caught")
            return 1
        write("resource/r.cpp", '#include "util/a.hpp"\n')
        write("newdir/x.cpp", "\n")
        if not any("in no layer" in e for e in check(tmp)):
            print("self-test: an unplaced directory was not caught")
            return 1
        print("self-test passed: upward, relative and unplaced includes "
              "are caught")
        return 0
    finally:
        shutil.rmtree(tmp)


def main(argv):
    if len(argv) == 2 and argv[1] == "--self-test":
        return self_test()
    if len(argv) != 2:
        print(__doc__)
        return 2
    errors = check(argv[1])
    if errors:
        print("Layering violations (rules: tests/docs/check_layering.py, "
              "docs/ARCHITECTURE.md \"Layers\"):")
        for e in errors:
            print("  " + e)
        return 1
    print(f"layering ok: {len(ALLOWED)} allowed upward include(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
