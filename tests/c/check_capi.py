#!/usr/bin/env python3
"""Checks of the C interface against src/api/spec.py.

usage: check_capi.py coverage SPEC_DIR HEADER TEST.c...
         every operation of the spec has its C form in HEADER (the generated
         lci_c_binding.h), is called in one of the C tests, and fails there
         once (the call of a CHECK_FAILS) unless NO_ERROR_PATH says why not;
         so does the graph-node form (lci_graph_add_node_<op>) of every
         posting call
       check_capi.py generator SPEC_DIR
         an operation added to the spec (new optional arguments of known
         types, a sugar of post_comm, attributes) or a resource with a
         handle gets its C form with no other change; a type of a new kind
         stops the generator naming it
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


# operations without a failing call in the C tests, and why
NO_ERROR_PATH = {
    "global_initialize": "fails only for a bad LCI_ATTR_* variable, which "
                         "the C tests leave unset (tests/unit/test_compat.cpp "
                         "GlobalDefaultAttributes sets one)",
    "get_g_runtime": "takes nothing that could be bad (after "
                     "g_runtime_fina it returns the empty handle, which the "
                     "calls taking it reject)",
}


def has_args(gen, o):
    positional, optional = gen.expanded_args(o)
    optional = [a for a in optional if a.name not in o.cxx_only]
    return bool(optional or o.attrs_of)


def is_posting(spec, o):
    """A posting call: post_comm (the operation with a lean entry) or one
    of its sugars."""
    base = o
    if o.sugar:
        base = next(b for b in spec.OPS if b.name == o.sugar[0])
    return bool(base.lean)


def coverage(spec_dir, header, tests):
    spec, gen = load_spec(spec_dir)
    htext = open(header).read()
    ttext = "\n".join(re.sub(r"/\*.*?\*/", "", open(t).read(), flags=re.S)
                      for t in tests)
    passed = failed = 0
    for o in spec.OPS:
        if o.no_c:
            # left out of C on purpose, with its reason in the spec; it
            # must then not be declared either
            ok = not re.search(r"\blci_%s\(" % o.name, htext)
            if ok:
                passed += 1
            else:
                failed += 1
                print("lci_%s is declared though its no_c says: %s"
                      % (o.name, o.no_c))
            continue
        checks = [
            (re.search(r"\blci_error_t lci_%s\(" % o.name, htext),
             "lci_%s is not declared in %s" % (o.name, header)),
            (re.search(r"\blci_%s\(" % o.name, ttext),
             "lci_%s is never called by the C tests" % o.name),
        ]
        if o.name not in NO_ERROR_PATH:
            checks.append((re.search(r"CHECK_FAILS\(\s*lci_%s\(" % o.name,
                                     ttext),
                           "lci_%s never fails in the C tests (a CHECK_FAILS "
                           "call, or a reason in NO_ERROR_PATH)" % o.name))
        if is_posting(spec, o):
            # graph_add_node_op's C form for this posting call
            node = "lci_graph_add_node_" + o.name
            checks += [
                (re.search(r"\blci_error_t %s\(" % node, htext),
                 "%s is not declared in %s" % (node, header)),
                (re.search(r"\b%s\(" % node, ttext),
                 "%s is never called by the C tests" % node),
                (re.search(r"CHECK_FAILS\(\s*%s\(" % node, ttext),
                 "%s never fails in the C tests" % node)]
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


def generator(spec_dir):
    spec, gen = load_spec(spec_dir)
    import gen_c  # noqa: E402
    passed = failed = 0

    def expect(ok, what):
        nonlocal passed, failed
        if ok:
            passed += 1
        else:
            failed += 1
            print("FAIL: " + what)

    saved = list(spec.OPS)
    saved_resources = list(spec.RESOURCES)
    saved_handles = list(gen.HANDLES)
    try:
        spec.OPS.append(spec.op(
            "zz_probe", "status_t",
            [spec.pos("int", "rank"), spec.pos("comp_t", "comp"), spec.RT,
             spec.opt("uint64_t", "zz_flags", "0x10"),
             spec.opt("matching_policy_t", "zz_policy",
                      "matching_policy_t::tag_only"),
             spec.opt("rmr_t", "zz_rmr", "RMR_NULL")],
            doc="a probe"))
        spec.OPS.append(spec.op(
            "zz_send_probe", "status_t",
            [spec.pos("int", "rank"), spec.pos("void*", "local_buffer"),
             spec.pos("size_t", "size"), spec.pos("comp_t", "local_comp")],
            sugar=("post_comm", {"direction": "direction_t::OUT"})))
        spec.OPS.append(spec.op("zz_alloc_probe", "comp_t", [spec.RT],
                                attrs_of="cq"))
        h, cpp, _ = gen_c.generate(gen.expanded_args, gen.resource,
                                   gen.HANDLES)
        expect("lci_error_t lci_zz_probe(int rank, lci_comp_t comp, "
               "const lci_zz_probe_args_t* args, lci_status_t* out);" in h,
               "the probe's prototype")
        expect("#define LCI_ZZ_PROBE_ARGS_INIT {NULL, 0x10, "
               "LCI_MATCHING_POLICY_TAG_ONLY, LCI_RMR_NULL_INIT}" in h,
               "the probe's INIT macro")
        expect("x.zz_policy(lci::capi::cxx(args->zz_policy));" in cpp,
               "the probe's optional argument passed on")
        expect(re.search(r"lci_zz_send_probe_args_t \{[^}]*\btag;", h)
               is not None, "the sugar op takes post_comm's tag")
        expect("lci_error_t lci_graph_add_node_zz_send_probe(lci_comp_t graph, "
               "int rank, void* local_buffer, size_t size, "
               "const lci_zz_send_probe_args_t* args, "
               "lci_graph_node_t* out);" in h and
               "lci::graph_add_node_op(lci::capi::cxx(graph), x)" in cpp,
               "a posting sugar op gets its graph-node form")
        expect("lci_graph_add_node_zz_probe" not in h,
               "only a posting call has a graph-node form")
        expect("lci_zz_alloc_probe_args_t" in h and
               "if (args->cq_type != nullptr) x.cq_type("
               "lci::detail::parse_attr_cq_type(args->cq_type, "
               "\"lci_zz_alloc_probe\"));" in cpp, "an allocating op takes its resource's attributes")
        # a resource with a handle: typedef, conversions, getters, and
        # operations taking it
        spec.RESOURCES.append(spec.Resource("zz_widget", [
            spec.attr("size_t", "zz_width", 4, "a width")], "a probe"))
        gen.HANDLES.append("zz_widget")
        spec.OPS.append(spec.op("zz_alloc_widget", "zz_widget_t", [spec.RT],
                                attrs_of="zz_widget"))
        spec.OPS.append(spec.op("zz_free_widget", "void",
                                [spec.pos("zz_widget_t*", "w")]))
        h, cpp, hpp = gen_c.generate(gen.expanded_args, gen.resource,
                                     gen.HANDLES)
        expect("typedef struct lci_zz_widget_s* lci_zz_widget_t;" in h and
               "inline zz_widget_t cxx(lci_zz_widget_t h)" in hpp and
               "lci_error_t lci_zz_widget_get_attr_zz_width("
               "lci_zz_widget_t zz_widget, size_t* out);" in h and
               "lci_error_t lci_zz_free_widget(lci_zz_widget_t* w);" in h and
               "lci_zz_alloc_widget_args_t" in h,
               "a new resource gets its C handle, getters and operations")
        spec.OPS.append(spec.op("zz_bad", "void",
                                [spec.pos("widget_t", "w")]))
        try:
            gen_c.generate(gen.expanded_args, gen.resource, gen.HANDLES)
            expect(False, "a type of a new kind must stop the generator")
        except gen_c.GenError as e:
            expect("widget_t" in str(e) and "zz_bad" in str(e),
                   "the generator's error names the op and the type: %s" % e)
    finally:
        spec.OPS[:] = saved
        spec.RESOURCES[:] = saved_resources
        gen.HANDLES[:] = saved_handles
    return passed, failed


def header(spec_dir, includes, cmd):
    spec, gen = load_spec(spec_dir)
    lines = ["#include <lci.h>\n", "int main(void)\n{\n"]
    for o in spec.OPS:
        if o.no_c:
            continue
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
    elif len(argv) == 3 and argv[1] == "generator":
        passed, failed = generator(argv[2])
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
