#!/usr/bin/env python3
"""Write docs/REFERENCE.md, the reference of every operation and attribute,
from spec.py (Python 3 standard library only).

usage: gen_ref.py OUT_FILE       e.g. python3 src/api/gen_ref.py docs/REFERENCE.md

Everything on the page comes from spec.py and from what gen.py and gen_c.py
derive from it (a sugar operation's arguments, the C prototype), so an
operation or attribute added to the spec appears here once the page is
regenerated; the test docs.reference fails until it is.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spec  # noqa: E402
import gen  # noqa: E402
import gen_c  # noqa: E402

COMMAND = "python3 src/api/gen_ref.py docs/REFERENCE.md"


def cell(text):
    """Text for a Markdown table cell."""
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace(
        "\n", " ")


def code(text):
    text = str(text)
    return "``%s``" % text if "`" in text else "`%s`" % text


def attr_default(a):
    if a.type == "bool":
        return "true" if a.default else "false"
    if a.type == "uint64_t" and isinstance(a.default, int):
        return hex(a.default)
    return str(a.default)


def summary(doc):
    """The doc up to its first clause break outside parentheses."""
    depth = 0
    for i, ch in enumerate(doc):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(0, depth - 1)
        elif depth == 0 and ch in ";:" and doc[i + 1:i + 2] == " ":
            return doc[:i]
        elif depth == 0 and ch == "." and doc[i + 1:i + 2] == " ":
            return doc[:i]
    return doc


def c_prototypes():
    """op name -> C prototype; an operation whose C form cannot be derived
    (gen.py then fails the build, naming the type) has none."""
    gen_c.HANDLE_TYPES = gen_c.FIXED_HANDLE_TYPES | {
        n + "_t" for n in gen.HANDLES}
    protos = {}
    for o in spec.OPS:
        try:
            attrs = gen.resource(o.attrs_of).attrs if o.attrs_of else []
            protos[o.name] = gen_c.COp(o, gen.expanded_args, attrs).proto()
        except (gen_c.GenError, KeyError):
            pass
    return protos


def op_section(o, protos):
    positional, optional = gen.expanded_args(o)
    out = ["### %s\n\n" % o.name]
    sig = "%s %s(%s)" % (o.ret, o.name,
                         ", ".join("%s %s" % (a.type, a.name)
                                   for a in positional))
    out.append("```c++\n%s\n```\n\n" % sig)
    if o.doc:
        out.append(o.doc + ".\n\n")
    if o.sugar:
        base, fixed = o.sugar
        out.append("Sugar for [%s](#%s) with %s; its positional arguments "
                   "are the base's of the same name.\n\n"
                   % (base, base, ", ".join(
                       "%s = %s" % (code(k), code(v))
                       for k, v in fixed.items())))
    if optional:
        out.append("Optional arguments, set by name on `%s_x(...)` in any "
                   "order:\n\n| argument | type | default |\n|---|---|---|\n"
                   % o.name)
        for a in optional:
            out.append("| %s | %s | %s |\n" % (
                cell(a.name), cell(code(a.type)), cell(code(a.default))))
        out.append("\n")
    if o.attrs_of:
        names = [a.name for a in gen.resource(o.attrs_of).attrs
                 + spec.IDENTITY]
        out.append("Also takes every attribute of the %s as an optional "
                   "argument ([%s attributes](#%s-attributes): %s).\n\n"
                   % (o.attrs_of, o.attrs_of, o.attrs_of,
                      ", ".join(code(n) for n in names)))
    out.append("Returns %s.\n\n" % ("nothing" if o.ret == "void"
                                   else code(o.ret)))
    if o.name in protos:
        out.append("C: `%s`\n\n" % protos[o.name])
    return "".join(out)


def gen_ref():
    protos = c_prototypes()
    out = [
        "# Reference\n\n",
        "Every operation and attribute of LCI, generated from "
        "`src/api/spec.py` by `%s`: do not edit this page, change the spec "
        "and run the command (the test `docs.reference` fails while the page "
        "is stale).\n\n" % COMMAND,
        "## How to call an operation\n\n",
        "Each operation `op` exists in two forms (`#include <lci.hpp>`, "
        "namespace `lci`):\n\n",
        "- `op(positional...)`: every optional argument at its default;\n",
        "- `op_x(positional...)`, an object with one setter per optional "
        "argument, set in any order, then called: "
        "`lci::post_send_x(rank, buf, size, tag, comp).device(d)"
        ".allow_retry(false)()`.\n\n",
        "An allocating operation (`alloc_runtime`, `alloc_device`, ...) also "
        "takes the resource's attributes as optional arguments. An "
        "attribute's value is the one set on the call, else the environment "
        "variable `LCI_ATTR_<NAME>`, else its default; a value that does not "
        "parse is an error (`lci::fatal_error`) naming the variable. "
        "`handle.get_attr_<name>()` reads a resource's value back.\n\n",
        "Posting operations return an `lci::status_t` whose error is done "
        "(completed now: the completion object will not be signalled), "
        "posted (it will be) or retry (nothing happened: post again later). "
        "Fatal errors throw `lci::fatal_error`. The C interface "
        "(`lci.h`, docs/C_API.md) has the same operations as `lci_<op>`; "
        "its prototype is given under each operation.\n\n",
        "## Operations\n\n",
        "| operation | returns | summary |\n|---|---|---|\n"]
    for o in spec.OPS:
        out.append("| [%s](#%s) | %s | %s |\n" % (
            o.name, o.name, cell(code(o.ret)), cell(summary(o.doc))))
    out.append("\n")
    for o in spec.OPS:
        out.append(op_section(o, protos))
    out.append("## Attributes\n\n")
    for r in spec.RESOURCES:
        allocs = [o.name for o in spec.OPS if o.attrs_of == r.name]
        out.append("### %s attributes\n\n%s%s.%s\n\n" % (
            r.name, r.doc[0].upper(), r.doc[1:],
            (" Set on %s." % ", ".join("[%s](#%s)" % (n, n) for n in allocs))
            if allocs else ""))
        out.append("| attribute | type | default | environment | meaning |\n"
                   "|---|---|---|---|---|\n")
        reported = spec.REPORTED.get(r.name, [])
        for a in r.attrs + reported + spec.IDENTITY:
            meaning = a.help
            if a.choices:
                meaning += " (one of: %s)" % ", ".join(a.choices)
            env = "LCI_ATTR_" + a.name.upper()
            if a in reported:
                env = "none: reported"
            elif a in spec.IDENTITY:
                env = "none: set on the call only"
            out.append("| %s | %s | %s | %s | %s |\n" % (
                cell(a.name), cell(code(a.type)), cell(code(attr_default(a))),
                cell(env), cell(meaning)))
        out.append("\n")
    return "".join(out)


def main(argv):
    out, status = gen.one_argument(argv, __doc__)
    if out is None:
        return status
    gen.write_if_changed(out, gen_ref())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
