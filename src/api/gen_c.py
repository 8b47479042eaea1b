"""The C interface generated from spec.py (used by gen.py).

For every operation of spec.OPS:
  - lci_c_binding.h: `lci_<op>_args_t` (its optional arguments and, for an
    allocating call, the resource's attributes) with LCI_<OP>_ARGS_INIT, and
    the prototype `lci_error_t lci_<op>(positional..., args, out)`;
  - lci_c_binding.cpp: its definition, which converts the arguments
    (src/capi/capi.hpp), runs the C++ OFF object `<op>_x` and turns an
    exception into an error code and the thread's last-error message.
For every posting call (post_comm and its sugars): its graph-node form
`lci_graph_add_node_<op>(graph, positional but local_comp, args, out)`, the
C form of graph_add_node_op.
For every attribute of a resource with a handle: a getter
`lci_<resource>_get_attr_<name>(handle, out)`.

The C form of a type is derived from its C++ name (T_t -> lci_T_t), so an
operation added to spec.py gets its C form without a change here unless it
brings a type of a new kind; then generation stops naming the type.
"""
import re
import textwrap

import spec

# C++ scalar types spelled the same in C
SAME = {"int", "unsigned", "size_t", "uint64_t", "int64_t", "uint32_t",
        "int32_t", "uint16_t", "int16_t", "uint8_t", "int8_t", "bool",
        "void*", "const void*", "char*", "const char*", "double"}
# spec types whose C form is a handle (an opaque pointer, NULL = empty):
# the resources with a handle class (gen.HANDLES, whose C typedefs and
# conversions are generated) and these of lci.h / src/capi/capi.hpp
FIXED_HANDLE_TYPES = {"comp_t", "mr_t", "net_context_t", "endpoint_t"}
HANDLE_TYPES = set(FIXED_HANDLE_TYPES)  # set by generate()
# C++ types of lci.hpp that have a C twin of the same name with an lci_
# prefix (lci.h); a spec type not listed here or above is an error
TWINS = {"tag_t", "rcomp_t", "rmr_t", "status_t", "error_t", "direction_t",
         "comp_semantic_t", "matching_policy_t", "matching_entry_key_t",
         "matching_entry_val_t", "matching_entry_type_t",
         "matching_engine_make_key_t", "reduce_op_t", "graph_node_t",
         "graph_node_run_cb_t", "graph_node_free_cb_t", "graph_edge_run_cb_t",
         "broadcast_algorithm_t", "allreduce_algorithm_t",
         "reduce_scatter_algorithm_t", "allgather_algorithm_t"}
# C++ types whose C form takes more than the one value: a handler function
# takes a context too (C has no closures). (C type, C name) per part; the
# operations with such an argument are implemented in src/capi/capi.cpp.
SPLIT = {"comp_handler_t": [("lci_comp_handler_t", "{}"),
                            ("void*", "{}_context")]}
# C++ list types (a std::vector) whose C form is an array and its length:
# the C type of an element (lci.h), converted by lci::capi::cxx_list
LISTS = {"buffers_t": "lci_buffer_t", "rbuffers_t": "lci_rbuffer_t"}
# operations whose C form is hand-written in src/capi/capi.cpp as
# capi::<op>(C arguments...) (the generator still writes the declaration,
# the args struct and the exception barrier)
CUSTOM = {"alloc_handler", "set_allocator", "get_allocator"}
# the positional argument of a posting call that graph_add_node_op points
# at the graph
NODE_COMP = "local_comp"


class GenError(Exception):
    pass


def op_by_name(name):
    for o in spec.OPS:
        if o.name == name:
            return o
    raise KeyError(name)


def c_type(t, where):
    """The C spelling of spec type `t` (one value)."""
    if t in SAME:
        return t
    if t == "std::string":
        return "const char*"
    if t == "allocator_base_t*":
        return "const lci_allocator_t*"
    base = t.rstrip("*")
    stars = t[len(base):]
    if base in HANDLE_TYPES or base in TWINS:
        return "lci_" + base + stars
    raise GenError("%s: type %s has no C form; add it to src/api/gen_c.py "
                   "(and include/lci.h)" % (where, t))


def c_params(a, where):
    """[(C type, C name)] of one spec argument."""
    if a.type in SPLIT:
        return [(ct, n.format(a.name)) for ct, n in SPLIT[a.type]]
    if a.type in LISTS:
        return [("const %s*" % LISTS[a.type], a.name),
                ("size_t", a.name + "_count")]
    return [(c_type(a.type, where), a.name)]


def c_default(a, where):
    """The C initializer of an optional argument's default."""
    d = str(a.default)
    if a.type in SPLIT:
        if d != "nullptr":
            raise GenError("%s: default %s of a split type" % (where, d))
        return ["NULL"] * len(SPLIT[a.type])
    if a.type in LISTS:
        if d != a.type + "()":
            raise GenError("%s: default %s of a list" % (where, d))
        return ["NULL", "0"]
    if d == "nullptr":
        return ["NULL"]
    m = re.match(r"^(\w+)_t\(\)$", d)
    if m and m.group(1) + "_t" in HANDLE_TYPES:
        return ["NULL"]
    if d == "RMR_NULL":
        return ["LCI_RMR_NULL_INIT"]
    if d in ("RCOMP_NULL", "COMP_NULL", "COMP_NULL_RETRY", "ANY_TAG",
             "ANY_SOURCE"):
        return ["LCI_" + d]
    m = re.match(r"^status_t\(errorcode_t::(\w+)\)$", d)
    if m:
        return ["LCI_STATUS_INIT(LCI_%s)" % m.group(1).upper()]
    m = re.match(r"^errorcode_t::(\w+)$", d)
    if m:
        return ["LCI_" + m.group(1).upper()]
    m = re.match(r"^(\w+)_t::(\w+)$", d)
    if m:
        return ["LCI_%s_%s" % (m.group(1).upper(), m.group(2).upper())]
    if d in ("true", "false") or re.match(r"^-?(0x[0-9a-fA-F]+|[0-9]+)"
                                          r"(U?L{0,2})?$", d):
        return [d]
    raise GenError("%s: default %r of %s has no C form; add it to "
                   "src/api/gen_c.py" % (where, d, a.name))


def is_enum(a):
    """An attribute whose C++ type is an enum class of its choices (in C:
    the name of the value, a string)."""
    return bool(a.choices) and a.type != "std::string"


def attr_c_type(a, where):
    """(C field type, unset initializer, C++ test that it is set)."""
    if a.type == "std::string" or is_enum(a):
        return "const char*", "NULL", "args->{0} != nullptr"
    if a.type == "bool":
        return "int", "LCI_UNSET", "args->{0} != LCI_UNSET"
    if a.type in ("int", "size_t", "uint64_t", "int64_t", "uint32_t",
                  "int32_t", "double"):
        return (a.type, "(%s)LCI_UNSET" % a.type,
                "args->{0} != static_cast<%s>(LCI_UNSET)" % a.type)
    raise GenError("%s: attribute %s of type %s has no C form; add it to "
                   "src/api/gen_c.py" % (where, a.name, a.type))


def out_type(o):
    """The C type of the `out` parameter, or None (void, error_t)."""
    if o.ret in ("void", "error_t"):
        return None
    return c_type(o.ret, o.name + " (return)")


class COp:
    """One operation's C form."""

    def __init__(self, o, expanded_args, attrs):
        self.o = o
        self.name = o.name
        self.positional, optional = expanded_args(o)
        self.optional = [a for a in optional if a.name not in o.cxx_only]
        self.attrs = attrs
        self.out = out_type(o)
        self.has_args = bool(self.optional or self.attrs)

    def params(self):
        ps = []
        for a in self.positional:
            ps += c_params(a, self.name)
        if self.has_args:
            ps.append(("const lci_%s_args_t*" % self.name, "args"))
        if self.out:
            ps.append((self.out + "*", "out"))
        return ps

    def proto(self):
        ps = self.params()
        return "lci_error_t lci_%s(%s)" % (
            self.name, ", ".join("%s %s" % p for p in ps) if ps else "void")

    def node_params(self):
        """The parameters of lci_graph_add_node_<op>, the C form of
        graph_add_node_op(graph, <op>_x(...)) for a posting call: its
        positional arguments but the completion object (the graph)."""
        ps = [("lci_comp_t", "graph")]
        for a in self.positional:
            if a.name != NODE_COMP:
                ps += c_params(a, self.name)
        ps.append(("const lci_%s_args_t*" % self.name, "args"))
        ps.append(("lci_graph_node_t*", "out"))
        return ps

    def node_proto(self):
        return "lci_error_t lci_graph_add_node_%s(%s)" % (
            self.name, ", ".join("%s %s" % p for p in self.node_params()))


def gen_header(ops, attr_getters, handles):
    out = ["/* Generated by src/api/gen.py from src/api/spec.py. Do not "
           "edit: change the spec. */\n",
           "#ifndef LCI_C_BINDING_H\n#define LCI_C_BINDING_H\n\n",
           "/* Included by lci.h after the basic types. */\n\n",
           "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n",
           "/* Resource handles (NULL: empty; in an args struct: the default "
           "one). */\n"]
    for n in handles:
        out.append("typedef struct lci_%s_s* lci_%s_t;\n" % (n, n))
    out.append("\n")
    for c in ops:
        o = c.o
        if o.doc:
            # the C++ operation's words (its C++ names: nullptr is NULL)
            out.append("/* %s */\n" % "\n   ".join(textwrap.wrap(
                o.doc.replace("*/", "* /"), 74)))
        if c.has_args:
            out.append("typedef struct lci_%s_args_t {\n" % c.name)
            inits = []
            for a in c.optional:
                for (ct, cn), d in zip(c_params(a, c.name),
                                       c_default(a, c.name)):
                    out.append("  %s %s; /* default %s */\n" % (ct, cn, d))
                    inits.append(d)
            for a in c.attrs:
                ct, unset, _ = attr_c_type(a, c.name)
                out.append("  %s %s; /* attribute (LCI_ATTR_%s) */\n"
                           % (ct, a.name, a.name.upper()))
                inits.append(unset)
            out.append("} lci_%s_args_t;\n" % c.name)
            out.append("#define LCI_%s_ARGS_INIT {%s}\n"
                       % (c.name.upper(), ", ".join(inits)))
        out.append("%s;\n\n" % c.proto())
        if uses_lean(c):
            out.append("/* lci_%s as a graph node (graph_add_node_op): when "
                       "the node runs it posts\n   with `graph` as "
                       "local_comp and the node as user_context; done "
                       "completes the\n   node, posted when the "
                       "communication completes, retry runs it again. "
                       "`*args`\n   (NULL: defaults) is copied. */\n"
                       % c.name)
            out.append("%s;\n\n" % c.node_proto())
    out.append("/* Resource attributes as they were when the resource was "
               "allocated (a string\n   stays valid while the resource "
               "lives). */\n")
    for res, a in attr_getters:
        ct = attr_getter_type(a)
        out.append("lci_error_t lci_%s_get_attr_%s(lci_%s_t %s, %s* out);\n"
                   % (res, a.name, res, res, ct))
    out.append("\n#ifdef __cplusplus\n}\n#endif\n\n#endif /* LCI_C_BINDING_H "
               "*/\n")
    return "".join(out)


def attr_getter_type(a):
    if a.type == "std::string" or is_enum(a):
        return "const char*"
    return c_type(a.type, "attribute " + a.name)


def cxx_value(a, expr):
    """C++ expression converting the C value(s) of argument `a`."""
    if a.type in LISTS:
        return "lci::capi::cxx_list(%s, %s_count)" % (expr, expr)
    return "lci::capi::cxx(%s)" % expr


def call_args(c):
    """The C argument names of lci_<op>, in order."""
    args = []
    for a in c.positional:
        args += [n for _, n in c_params(a, c.name)]
    if c.has_args:
        args.append("args")
    if c.out:
        args.append("out")
    return args


def set_args_lines(c):
    """Lines that set the fields of `*args` on the OFF object `x`."""
    lines = []
    for a in c.optional:
        if a.type in SPLIT:
            raise GenError("%s: optional %s of type %s needs a "
                           "hand-written C form" % (c.name, a.name, a.type))
        lines.append("x.%s(%s);" % (a.name, cxx_value(a, "args->" + a.name)))
    for a in c.attrs:
        _, _, test = attr_c_type(a, c.name)
        val = "args->" + a.name
        if a.type == "bool":
            val = "args->%s != 0" % a.name
        if is_enum(a):
            val = 'lci::detail::parse_%s(args->%s, "lci_%s")' % (
                a.type[:-2], a.name, c.name)
        lines.append("if (%s) x.%s(%s);" % (test.format(a.name), a.name, val))
    return lines


def gen_call(c, with_args):
    """Lines that run the C++ OFF object of `c` and return the C result:
    with_args, with the fields of `*args`; else with its defaults."""
    o = c.o
    lines = []
    ctor = []
    post = []
    for a in c.positional:
        if a.type in SPLIT:
            raise GenError("%s: argument %s of type %s needs a hand-written "
                           "C form (gen_c.CUSTOM)" % (c.name, a.name, a.type))
        base = a.type.rstrip("*")
        if a.type.endswith("*") and base in HANDLE_TYPES:
            # the C++ call empties the handle it frees: run it on a C++
            # copy, then write the copy back
            lines.append("lci::%s %s_v;" % (base, a.name))
            lines.append("lci::%s* %s_p = nullptr;" % (base, a.name))
            lines.append("if (%s) { %s_v = lci::capi::cxx(*%s); "
                         "%s_p = &%s_v; }"
                         % (a.name, a.name, a.name, a.name, a.name))
            ctor.append("%s_p" % a.name)
            post.append("if (%s) *%s = lci::capi::c(%s_v);"
                        % (a.name, a.name, a.name))
        else:
            ctor.append(cxx_value(a, a.name))
    obj = "lci::%s_x(%s)" % (c.name, ", ".join(ctor))
    if with_args:
        lines.append("auto x = %s;" % obj)
        lines += set_args_lines(c)
        expr = "x.call()"
    else:
        # the defaults are visible to the compiler (the lean entry of a
        # post is chosen at compile time)
        expr = "%s.call()" % obj
    if o.ret == "status_t" and not with_args and not uses_lean(c):
        # the C++ call constructs its status in `*out` itself (the twins
        # have one layout): no copy of the status on the way out; a caller
        # that discards the status (rare: it is the popped entry, the
        # graph's result) goes through a function of its own, so that this
        # path keeps no spare status in its frame. A posting call's caller
        # often discards it: a spare in the frame costs it less than the
        # call
        lines.append("if (!out) return lci::capi::generated::%s_unwanted(%s);"
                     % (c.name, ", ".join(call_args(c)[:-1])))
        lines.append("const lci::status_t* r = ::new (static_cast<void*>(out)) "
                     "lci::status_t(%s);" % expr)
        lines += post
        lines.append("return lci::capi::c(r->error.errorcode);")
        return lines
    if o.ret == "status_t":
        lines.append("lci::capi::status_space_t spare;")
        lines.append("const lci::status_t* r = ::new "
                     "(lci::capi::status_slot(out, &spare)) "
                     "lci::status_t(%s);" % expr)
        lines += post
        lines.append("return lci::capi::c(r->error.errorcode);")
        return lines
    if o.ret == "void":
        lines.append("%s;" % expr)
    else:
        result = o.ret if o.ret in SAME else "lci::" + o.ret
        lines.append("%s const r = %s;" % (result, expr))
    lines += post
    if o.ret == "void":
        lines.append("return LCI_DONE;")
    elif o.ret == "error_t":
        lines.append("return lci::capi::c(r.errorcode);")
    else:
        lines.append("if (out) *out = lci::capi::c(r);")
        lines.append("return LCI_DONE;")
    return lines


def gen_body(c):
    """The body of lci_<op> (inside try)."""
    if c.name in CUSTOM:
        return ["return lci::capi::%s(%s);" % (c.name,
                                               ", ".join(call_args(c)))]
    lines = []
    if c.has_args:
        # the fields of an args struct in a function of their own, so that
        # the call without one carries none of their frame
        lines.append("if (args) return lci::capi::generated::%s(%s);"
                     % (c.name, ", ".join(call_args(c))))
    return lines + gen_call(c, False)


def uses_lean(c):
    """A posting call (its base operation has a lean entry)."""
    base = op_by_name(c.o.sugar[0]) if c.o.sugar else c.o
    return bool(base.lean)


def gen_node(c):
    """The definition of lci_graph_add_node_<op>: the OFF object (the graph
    as its completion object) handed to graph_add_node_op, which copies
    it."""
    ctor = []
    for a in c.positional:
        ctor.append("lci::capi::cxx(graph)" if a.name == NODE_COMP
                    else cxx_value(a, a.name))
    out = ["%s\n{\n  try {\n" % c.node_proto(),
           "    auto x = lci::%s_x(%s);\n" % (c.name, ", ".join(ctor)),
           "    if (args) {\n"]
    out += ["      %s\n" % line for line in set_args_lines(c)]
    out.append("    }\n")
    out.append("    const lci::graph_node_t r = "
               "lci::graph_add_node_op(lci::capi::cxx(graph), x);\n")
    out.append("    if (out) *out = lci::capi::c(r);\n")
    out.append("    return LCI_DONE;\n")
    out.append('  } catch (...) {\n'
               '    return lci::capi::fail("lci_graph_add_node_%s");\n'
               '  }\n}\n\n' % c.name)
    return "".join(out)


def gen_handles_hpp(handles):
    """lci_c_handles.hpp: the conversions of the resource handles."""
    out = ["// Generated by src/api/gen.py from src/api/spec.py. Do not edit: "
           "change the spec.\n",
           "// The resource handles between their C and C++ forms (the same "
           "pointer);\n// included by src/capi/capi.hpp.\n",
           "#ifndef LCI_C_HANDLES_HPP\n#define LCI_C_HANDLES_HPP\n\n",
           "namespace lci::capi\n{\n\n"]
    for n in handles:
        out.append("inline %s_t cxx(lci_%s_t h)\n{\n  return %s_t("
                   "reinterpret_cast<%s_impl_t*>(h));\n}\n" % (n, n, n, n))
        out.append("inline lci_%s_t c(%s_t h)\n{\n  return "
                   "reinterpret_cast<lci_%s_t>(h.p_impl);\n}\n" % (n, n, n))
    out.append("\n}  // namespace lci::capi\n\n#endif  // LCI_C_HANDLES_HPP\n")
    return "".join(out)


def gen_cpp(ops, attr_getters):
    out = ["// Generated by src/api/gen.py from src/api/spec.py. Do not edit: "
           "change the spec.\n",
           '#include <new>\n\n',
           '#include "capi/capi.hpp"\n',
           '#include "resource/resources.hpp"\n\n',
           "// lci_<op> with an args struct (called inside its exception "
           "barrier)\n",
           "namespace lci::capi::generated\n{\n\n"]
    # the posting calls: inline the OFF object's call() whole, so that its
    # default tests fold where the compiler sees the defaults and the lean
    # entry is called directly (the compiler's size heuristics would
    # otherwise keep call() out of line for the big object)
    for c in ops:
        if not c.has_args or c.name in CUSTOM:
            continue
        attrs = "flatten, noinline" if uses_lean(c) else "noinline"
        ps = ", ".join("%s %s" % p for p in c.params())
        out.append("__attribute__((%s)) lci_error_t %s(%s)\n{\n"
                   % (attrs, c.name, ps))
        for line in gen_call(c, True):
            out.append("  %s\n" % line)
        out.append("}\n\n")
    # lci_<op> whose caller passed no `out`: the same call with a status
    # of this function's
    for c in ops:
        if c.o.ret != "status_t" or c.name in CUSTOM or uses_lean(c):
            continue
        ps = c.params()[:-1]
        out.append("__attribute__((noinline)) lci_error_t %s_unwanted(%s)\n"
                   "{\n  lci_status_t s;\n  return lci_%s(%s);\n}\n\n"
                   % (c.name, ", ".join("%s %s" % p for p in ps) or "void",
                      c.name, ", ".join([n for _, n in ps] + ["&s"])))
    out.append("}  // namespace lci::capi::generated\n\nextern \"C\" {\n\n")
    for c in ops:
        if uses_lean(c):
            out.append("__attribute__((flatten))\n")
        out.append("%s\n{\n  try {\n" % c.proto())
        for line in gen_body(c):
            out.append("    %s\n" % line)
        if c.o.ret == "status_t":
            # `*out` is always written: a failed call's status carries its
            # code like a failed communication's
            out.append('  } catch (...) {\n'
                       '    return lci::capi::fail_status("lci_%s", out);\n'
                       '  }\n}\n\n' % c.name)
        else:
            out.append('  } catch (...) {\n'
                       '    return lci::capi::fail("lci_%s");\n  }\n}\n\n'
                       % c.name)
        if uses_lean(c):
            out.append(gen_node(c))
    for res, a in attr_getters:
        out.append("lci_error_t lci_%s_get_attr_%s(lci_%s_t %s, %s* out)\n{\n"
                   "  try {\n" % (res, a.name, res, res, attr_getter_type(a)))
        out.append("    const lci::%s_t h = lci::capi::cxx(%s);\n"
                   % (res, res))
        if a.type == "std::string":
            # the getter checks the handle; the string lives in the resource
            out.append("    (void)h.get_attr_%s();\n" % a.name)
            out.append("    if (out) *out = h.p_impl->attr.%s.c_str();\n"
                       % a.name)
        elif is_enum(a):
            out.append("    const auto r = h.get_attr_%s();\n" % a.name)
            out.append("    if (out) *out = lci::get_%s_str(r);\n"
                       % a.type[:-2])
        else:
            out.append("    const auto r = h.get_attr_%s();\n" % a.name)
            out.append("    if (out) *out = lci::capi::c(r);\n")
        out.append('    return LCI_DONE;\n  } catch (...) {\n'
                   '    return lci::capi::fail("lci_%s_get_attr_%s");\n'
                   '  }\n}\n\n' % (res, a.name))
    out.append('}  // extern "C"\n')
    return "".join(out)


def c_ops(expanded_args, resource):
    return [COp(o, expanded_args,
                resource(o.attrs_of).attrs if o.attrs_of else [])
            for o in spec.OPS if not o.no_c]


def attr_getters(handles, resource):
    return [(n, a) for n in handles for a in resource(n).attrs]


def generate(expanded_args, resource, handles):
    """(lci_c_binding.h, lci_c_binding.cpp, lci_c_handles.hpp) texts."""
    global HANDLE_TYPES
    HANDLE_TYPES = FIXED_HANDLE_TYPES | {n + "_t" for n in handles}
    ops = c_ops(expanded_args, resource)
    getters = attr_getters(handles, resource)
    return (gen_header(ops, getters, handles), gen_cpp(ops, getters),
            gen_handles_hpp(handles))
