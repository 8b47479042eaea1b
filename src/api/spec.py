# The one declarative list of LCI's resources, attributes and operations.
#
# gen.py turns this file into include/lci_binding.hpp (attribute structs,
# resource handles, and one OFF class `op_x` plus one plain function `op` per
# operation) and lci_binding.cpp (attribute defaults and their environment
# overrides, handle attribute getters). Nothing else lists these names: add an
# operation or an attribute here and the C++ interface follows.
#
# attr(type, name, default, help, choices=None)
#   An attribute of a resource. Its value comes from the allocating call's
#   setter, else the environment variable LCI_ATTR_<NAME>, else `default`.
#   `choices` restricts a string attribute to a set of names; with a type
#   other than std::string the attribute is an enum class of that name
#   whose values are the choices (the environment and the C interface
#   spell a value by its name).
# pos(type, name)           a positional argument, in order.
# opt(type, name, default)  an optional argument, set in any order on op_x.
# op(name, ret, args, attrs_of=None, doc)
#   `attrs_of` names a resource whose attributes become optional arguments;
#   the implementation then receives the merged `<resource>_attr_t attr`.
#   `sugar` = (base, fixed): the operation is `base` with some arguments
#   fixed; its positional arguments map to the base's by name and it takes
#   every other optional argument of the base. It has no implementation of
#   its own.
#   `lean` = names of optional arguments: the operation also has a lean
#   entry, `call_lean(positional..., lean...)`, which call() takes when
#   every other optional argument is at its default (an rmr_t: empty); the
#   generated test folds away when the caller set none of them. The common
#   calls then pass a few arguments instead of all of them, and the
#   implementation skips the checks of arguments that are known to be
#   defaults (it must behave exactly like call_impl).
#   `no_c` = why the operation has no C form (gen_c.py leaves it out and
#   tests/c/check_capi.py does not ask for it); None: it has one.
#   `cxx_only` = names of optional arguments that the C form leaves out
#   (upstream LCI 2's arguments added to an operation whose C form takes
#   no args struct: adding one would change its C signature).
#
# IDENTITY (below) are two more attributes of every resource: its name and
# user context (upstream LCI 2's). They are set by the allocating call only:
# never from the environment, not in global_attr_t, not in the C interface.
#
# global_attr_t (generated) has one field per attribute name of every
# resource: the defaults that get_g_default_attr reads and
# set_g_default_attr replaces. Attributes of one name in several resources
# must agree in type and default.

from collections import namedtuple

Attr = namedtuple("Attr", "type name default help choices")
Arg = namedtuple("Arg", "kind type name default")
Op = namedtuple("Op", "name ret args attrs_of sugar doc lean no_c cxx_only")
Resource = namedtuple("Resource", "name attrs doc")


def attr(type_, name, default, help_, choices=None):
    return Attr(type_, name, default, help_, choices)


def pos(type_, name):
    return Arg("pos", type_, name, None)


def opt(type_, name, default):
    return Arg("opt", type_, name, default)


def op(name, ret, args=(), attrs_of=None, sugar=None, doc="", lean=None,
       no_c=None, cxx_only=()):
    return Op(name, ret, list(args), attrs_of, sugar, doc, lean, no_c,
              tuple(cxx_only))


RESOURCES = [
    Resource("runtime", [
        attr("std::string", "ofi_provider_name", "auto",
             "libfabric provider of the runtime's network context: auto "
             "is shm when every rank runs on this host, else the first of "
             "cxi, efa, verbs and tcp that libfabric offers here (tcp: on "
             "the interface that routes to the other hosts, unless "
             "FI_TCP_IFACE names one; docs/LAUNCHING.md); after allocation "
             "the attribute reports the provider in force",
             choices=["auto", "shm", "tcp", "sockets", "verbs", "cxi",
                      "efa"]),
        attr("std::string", "backend", "auto",
             "network backend: ofi (libfabric, provider ofi_provider_name); "
             "shm (native shared memory: every rank on this node, no "
             "libfabric); hybrid (one device combining native shm for the "
             "ranks on this node with a network backend, net_remote, for "
             "the others, chosen per peer); socket (native TCP sockets, "
             "ranks on any node, no libfabric); ibv (libibverbs: "
             "InfiniBand, RoCE); auto (shm alone when every rank is on "
             "this node, else hybrid); get_attr_backend() reports the "
             "backend in force. See docs/ARCHITECTURE.md",
             choices=["ofi", "shm", "socket", "hybrid", "ibv", "auto"]),
        attr("std::string", "net_remote", "auto",
             "the hybrid backend's route to ranks on other nodes: socket "
             "(native TCP sockets), ofi (libfabric, provider "
             "ofi_provider_name), ibv (libibverbs), or auto (ofi when "
             "ofi_provider_name names a provider, else ibv when a device "
             "with an active port opens here, else socket; "
             "docs/LAUNCHING.md says when to choose ofi); the same on "
             "every rank",
             choices=["auto", "socket", "ofi", "ibv"]),
        attr("size_t", "shm_node_split", 1,
             "test and diagnostic knob: with k > 1, rank r pretends to run "
             "on node r % k of this machine, so the native shm backend "
             "treats ranks of other residues as remote (backend hybrid or "
             "auto then reach them through the route net_remote); the "
             "same on every rank"),
        attr("bool", "shm_cma", True,
             "native shm backend: RMA copies once with cross-memory attach "
             "(process_vm_writev/readv) when the kernel permits it (probed "
             "per peer); false copies twice through the rings"),
        attr("size_t", "shm_cma_threshold", 16384,
             "native shm backend: the smallest RMA transfer (a put, a get, "
             "a rendezvous fragment) that uses cross-memory attach when "
             "shm_cma allows it; smaller ones copy twice through the rings "
             "(no system call; the target's progress does the second copy). "
             "From 16 KiB the single copy is faster in latency and "
             "bandwidth; below, the rings' bandwidth is higher "
             "(docs/PERFORMANCE_LOG.md)"),
        attr("bool", "shm_membarrier", True,
             "native shm backend: senders write a message's stamp with a "
             "plain store and a receiver that stops polling an idle ring "
             "issues one membarrier(2) system call instead (both sides must "
             "allow it; the kernel must offer MEMBARRIER_CMD_GLOBAL_EXPEDITED); "
             "false: a locked store per message, no system call "
             "(docs/ARCHITECTURE.md, Doorbell)"),
        attr("size_t", "shm_ring_size", 262144,
             "native shm backend: bytes of each inbound ring (one per "
             "sender rank and device; rounded up to a power of two that "
             "holds two packets; at most 128 MiB); the same on every "
             "rank"),
        attr("int", "ibv_gid_idx", -1,
             "ibv backend: the GID index of the port (RoCE needs one); -1 "
             "selects automatically: on RoCE a RoCE v2 IPv4-mapped GID, "
             "else any RoCE v2 one, else the first non-zero one; on "
             "InfiniBand none (addressed by LID)"),
        attr("bool", "ibv_force_gid_auto_select", False,
             "ibv backend: select the GID automatically even when "
             "ibv_gid_idx names one"),
        attr("attr_ibv_odp_strategy_t", "ibv_odp_strategy", "none",
             "ibv backend: on-demand paging of registrations: none (pinned "
             "registrations), explicit_odp (each registration on demand), "
             "implicit_odp (one registration of the whole address space); "
             "a strategy the device does not report falls back to none "
             "(logged at level info)",
             choices=["none", "explicit_odp", "implicit_odp"]),
        attr("attr_ibv_prefetch_strategy_t", "ibv_prefetch_strategy", "none",
             "ibv backend, with on-demand paging (ibv_odp_strategy "
             "explicit_odp): after each new registration, ask the adapter to "
             "map its pages at once rather than on first access "
             "(ibv_advise_mr): prefetch (for reading), prefetch_write (for "
             "writing), prefetch_no_fault (only the pages already present), "
             "none (no request); a device that refuses the request works on "
             "without it (logged at level info)",
             choices=["none", "prefetch", "prefetch_write",
                      "prefetch_no_fault"]),
        attr("size_t", "ibv_lazy_connect_threshold", 256,
             "ibv backend: in jobs of more ranks than this, a queue pair "
             "is made ready to send (RTS) on its first send rather than "
             "at alloc_device (docs/ARCHITECTURE.md, \"The ibv backend\")"),
        attr("bool", "ibv_reg_cache", True,
             "ibv backend: a registration of a region that a live one "
             "covers shares it (the device registers once); false: each "
             "registration its own. The backend's own send and receive "
             "buffers (packets) are registered by pages once and kept "
             "either way (docs/ARCHITECTURE.md, \"The ibv backend\")"),
        attr("std::string", "bootstrap_backend", "auto",
             "how the ranks find each other: auto detects the launcher "
             "(mpi if the program initialized MPI, then pmix, then "
             "pmi2/pmi1, then tcp, else local; see docs/LAUNCHING.md); "
             "the other "
             "names force a backend. One backend per process: the first "
             "runtime's choice stays, and get_attr_bootstrap_backend() "
             "reports it",
             choices=["auto", "local", "pmi1", "pmi2", "pmix", "mpi",
                      "tcp"]),
        attr("size_t", "bootstrap_timeout", 0,
             "seconds any wait on the process manager (an address exchange "
             "or barrier of alloc_runtime, alloc_device, free_device) may "
             "take before it fails naming the request; 0 waits forever. "
             "Catches a rank that died unnoticed by the launcher. Applies "
             "to the pmi1, pmi2 and pmix backends"),
        attr("size_t", "max_inject_size", 64,
             "largest payload sent with the inject protocol on routes "
             "that inject (libfabric, ibv inline sends; clamped to the "
             "provider's inject size); routes that copy into memory of "
             "their own (native shm, socket) take every eager message "
             "that way whatever this says"),
        attr("uint64_t", "max_tag", 0xfffffffffffffffe,
             "largest tag a message may carry (ANY_TAG is reserved)"),
        attr("bool", "alloc_default_device", True,
             "allocate a default device with the runtime"),
        attr("bool", "alloc_default_matching_engine", True,
             "upstream LCI 2's switch of the runtime's default matching "
             "engine: accepted and reported; the runtime makes its default "
             "engine either way (a program that passes its own engine to "
             "each call never touches it)"),
        attr("size_t", "packet_return_threshold", 4096,
             "upstream LCI 2's size above which a sent packet goes back to "
             "the sending thread's share of its pool rather than the "
             "progress thread's: accepted and reported; here a packet goes "
             "back to the share of the thread that frees it, whatever its "
             "size (a cache placement choice, no change in what is "
             "delivered)"),
        attr("int", "imm_nbits_tag", 16,
             "upstream LCI 2's bits of a message's 32-bit immediate data "
             "that carry its tag (larger tags travel in the payload there): "
             "accepted and reported; here every message header carries the "
             "whole tag, so every tag up to max_tag takes the same path "
             "(get_attr_max_imm_tag reports max_tag). As upstream, "
             "imm_nbits_tag and imm_nbits_rcomp are at least 0 and sum to "
             "at most 31, else alloc_runtime is a fatal_error"),
        attr("int", "imm_nbits_rcomp", 15,
             "upstream LCI 2's bits of the immediate data that carry a "
             "remote completion handle: accepted and reported, as "
             "imm_nbits_tag; the header carries the whole handle "
             "(get_attr_max_imm_rcomp reports max_rcomp)"),
        attr("bool", "alloc_default_packet_pool", True,
             "false: the default device pre-posts no receives from the "
             "default packet pool (its net_max_recvs is 0), so that raw "
             "network receives (net_post_recv) have its messages to "
             "themselves, as upstream LCI 2 does without a default pool; "
             "the pool is still made, for the library's sends"),
        attr("bool", "attentive_progress", False,
             "when progress finds its own device idle, it also polls one "
             "other device of the runtime, chosen at random, if that "
             "device's lock is free (helps devices whose owner is busy)"),
        attr("size_t", "packet_size", 8192,
             "size of a packet of the default packet pool, header included"),
        attr("size_t", "npackets", 4096,
             "number of packets of the default packet pool"),
        attr("attr_rdv_protocol_t", "rdv_protocol", "auto_select",
             "rendezvous protocol of sends and active messages above the "
             "eager limit (the enum attr_rdv_protocol_t; LCI_ATTR_RDV_PROTOCOL "
             "and the C interface name the value): write (RTS, RTR, RDMA "
             "write, FIN message), writeimm (RTS, RTR, RDMA write with "
             "immediate data), get (RTS, RDMA read by the receiver, FIN "
             "message) or auto_select (writeimm when the backend delivers "
             "immediate data, else write; and where both ends copy each "
             "other's memory directly, native shm with cross-memory attach, "
             "split: the sender writes about half the message while the "
             "receiver reads the rest, or get for a message too small to "
             "split); the sender's choice rules; after "
             "allocation the attribute reports the protocol in force (on "
             "the routes without split)",
             choices=["auto_select", "write", "writeimm", "get"]),
        attr("size_t", "max_msg_size", 0,
             "largest single RDMA transfer of a rendezvous, put or get; "
             "larger ones are split (0: the backend's maximum; clamped to it; "
             "after allocation the attribute reports the value in force)"),
        attr("size_t", "max_am_rdv_bytes", 1 << 20,
             "bytes of rendezvous active messages (those above the eager "
             "limit) that one device receives at once: a request beyond "
             "them waits, in arrival order, until one of those completes, "
             "and is answered in a later progress call, so that a buffer the "
             "receiver freed meanwhile can be handed out again while it is "
             "still in the caches (docs/RUNTIME_DEVELOPERS.md); a message "
             "larger than the bound goes alone; 0: no bound"),
        attr("size_t", "peer_check_interval", 100,
             "milliseconds between two checks, by progress, that the "
             "processes of the peer ranks on this host are alive (by pid, "
             "exchanged at alloc_runtime); a dead one is a peer failure "
             "(docs/RELIABILITY.md). Checked with a coarse clock when "
             "progress is idle or every 64 calls; 0 disables the check "
             "(network errors still report failures)"),
        attr("size_t", "peer_timeout", 0,
             "milliseconds after which a peer rank on another host from "
             "which nothing arrived (no message, no heartbeat) is declared "
             "failed (docs/RELIABILITY.md): progress sends each such peer "
             "a heartbeat every peer_timeout / 5 ms, so a live peer is "
             "missed only when it makes no progress call for that long. "
             "0 (the default) disables it: a rank computing without "
             "progress is never taken for dead, and a host that fails is "
             "left to the launcher (which ends the job when a rank dies) "
             "and to network errors; set it (e.g. 10000) where a host or a "
             "link may fail while the job runs on"),
        attr("bool", "peer_failure_everywhere", False,
             "false (the default, as upstream LCI 2): progress throws "
             "peer_failure_error for a failed rank only on a rank that had "
             "operations outstanding with it (they complete with "
             "fatal_peer_failure); another rank goes on and can ask "
             "is_peer_failed. true: every progress call of the runtime "
             "throws it once per failed rank, wherever it runs "
             "(docs/RELIABILITY.md, \"Peer failure\")"),
        attr("bool", "coll_shm", True,
             "collectives through one shared-memory segment of the "
             "runtime's ranks when every rank runs on this node "
             "(docs/COLLECTIVES.md); false: always the point-to-point "
             "algorithms; the same on every rank"),
        attr("size_t", "idle_spins", 64,
             "progress calls in a row on one thread that find nothing "
             "before that thread yields the core once (sched_yield): in "
             "lci::progress itself, so blocking calls (sync_wait, blocking "
             "posts and collectives) and a program's own progress loop "
             "alike; 0 never yields. Yielding matters when ranks outnumber "
             "cores"),
        attr("bool", "register_local", False,
             "register the unregistered local buffer of every rendezvous, "
             "put and get on the fly, even when the backend does not need "
             "it (it always does when the backend requires local "
             "registration)"),
    ], "a runtime: bootstrap, network context and default resources"),
    Resource("device", [
        attr("size_t", "net_max_sends", 1024,
             "send queue depth of the device's endpoint"),
        attr("size_t", "net_max_recvs", 256,
             "receives kept pre-posted on the device (0: none; the device "
             "then receives only through net_post_recv, the raw network "
             "layer)"),
        attr("size_t", "net_max_cqes", 8192,
             "completion queue size of the device"),
        attr("bool", "alloc_default_endpoint", True,
             "upstream LCI 2's switch of the device's default endpoint: "
             "accepted and reported; a device here has its one endpoint "
             "(get_default_endpoint) either way"),
        attr("double", "net_send_reserved_pct", 0.25,
             "upstream LCI 2's fraction (0 to 1) of the send queue kept for "
             "the messages that progress sends: accepted (a value outside "
             "0 to 1 is a fatal_error) and reported; here a message of "
             "progress that finds the send queue full waits in the device's "
             "backlog, which progress posts as slots free up, so no slots "
             "are set apart for it"),
        attr("bool", "use_reg_cache", True,
             "upstream LCI 2's registration cache switch of a device: "
             "accepted and reported; the cache here belongs to the runtime "
             "(ibv_reg_cache: the ibv backend shares one registration "
             "among registrations of the regions it covers), the other "
             "backends register nothing; either way each mr_t is valid "
             "until it is deregistered"),
        attr("bool", "alloc_progress_endpoint", False,
             "upstream LCI 2's separate endpoint for the messages that "
             "progress sends (acknowledgements, rendezvous replies): "
             "accepted and reported; a device here sends everything "
             "through its one send queue either way"),
        attr("attr_ibv_td_strategy_t", "ibv_td_strategy", "per_qp",
             "ibv backend: thread domains of the device's queue pairs: "
             "per_qp (one per queue pair, and a try-lock per queue pair), "
             "all_qp (one for all, one try-lock for all; best when each "
             "thread has its own device) or none (no thread domain, one "
             "try-lock for all)",
             choices=["none", "all_qp", "per_qp"]),
    ], "a complete set of network resources (endpoint, completion queue)"),
    Resource("packet_pool", [
        attr("size_t", "packet_size", 8192,
             "size of a packet, header included"),
        attr("size_t", "npackets", 4096, "number of packets in the pool"),
    ], "fixed-size buffers for the inject and eager protocols"),
    Resource("matching_engine", [
        attr("size_t", "num_buckets", 65536,
             "hash buckets of the matching table"),
        attr("attr_matching_engine_type_t", "matching_engine_type", "map",
             "upstream LCI 2's choice of matching structure: map (a hash "
             "table keyed by the matching policy's key, what this library "
             "has) or queue (one list searched in order); both match a "
             "receive with the oldest send of its key and the reverse, so "
             "queue is accepted, reported, and served by the hash table",
             choices=["queue", "map"]),
    ], "matches incoming sends with posted receives"),
    Resource("sync", [
        attr("int", "threshold", 1, "signals needed before the synchronizer "
             "is ready"),
    ], "synchronizer completion object"),
    Resource("cq", [
        attr("attr_cq_type_t", "cq_type", "lcrq",
             "completion queue implementation: lcrq (unbounded, lock-free "
             "ring segments) or array_atomic (bounded fetch-and-add array of "
             "default_length entries; LCI_ATTR_CQ_TYPE and the C interface "
             "also take its short name array)",
             choices=["array_atomic", "lcrq"]),
        attr("size_t", "default_length", 8192,
             "capacity of an array queue; segment length of an lcrq queue"),
    ], "completion queue"),
]

# every resource's name (a copy is kept for the life of the process, so the
# caller's string may go) and user context; DEFAULT_NAME is "unnamed"
IDENTITY = [
    attr("const char*", "name", "DEFAULT_NAME",
         "the resource's name, for the user (the library only reports it)"),
    attr("void*", "user_context", "nullptr",
         "the user's pointer, reported and never touched"),
]
# attributes that a resource reports but no call sets (upstream LCI 2's),
# by resource: like IDENTITY, not from the environment, not in
# global_attr_t; the allocation fills them in
REPORTED = {
    "runtime": [
        attr("uint64_t", "max_imm_tag", 0,
             "the largest tag that travels with no extra bytes, also the "
             "largest of a put with a signal (upstream LCI 2's): here "
             "every header carries the whole tag, so max_tag"),
        attr("uint64_t", "max_imm_rcomp", 0,
             "the largest remote completion handle that travels with no "
             "extra bytes, also the largest of a put with a signal "
             "(upstream LCI 2's): here max_rcomp"),
        attr("uint64_t", "max_rcomp", 0,
             "the largest remote completion handle (register_rcomp, "
             "reserve_rcomps): the header field's limit"),
    ],
    "device": [attr("int", "uid", -1,
                    "a number unique among the process's devices, given at "
                    "allocation")],
}
# Upstream LCI 2's settings of a net context (alloc_net_context): unset,
# or the runtime's value in force (option_t: a value converts to a set one).
def unset_opt(type_, name):
    return opt("option_t<%s>" % type_, name, "option_t<%s>()" % type_)


NET_CONTEXT_OPTS = [
    opt("std::string", "ofi_provider_name", "std::string()")] + [
    unset_opt(t, n) for t, n in [
        ("size_t", "max_msg_size"), ("size_t", "max_inject_size"),
        ("int", "ibv_gid_idx"), ("bool", "ibv_force_gid_auto_select"),
        ("attr_ibv_odp_strategy_t", "ibv_odp_strategy"),
        ("attr_ibv_prefetch_strategy_t", "ibv_prefetch_strategy")]]

# IDENTITY (above) as optional arguments of the allocations of resources
# without attributes of their own (counters, handlers, graphs, endpoints,
# net contexts); nullptr: DEFAULT_NAME
NAME_OPTS = [opt("const char*", "name", "nullptr"),
             opt("void*", "user_context", "nullptr")]

# Other names an enum attribute's parser (LCI_ATTR_<NAME>, the C interface)
# takes for a value: this library's own earlier spelling beside upstream
# LCI 2's value name.
ENUM_ALIASES = {
    "attr_cq_type_t": {"array": "array_atomic"},
}

# `runtime`: default the global runtime. On the calls on a completion
# object or a registration (upstream LCI 2's), which know their own, a
# given runtime is only checked to be live (get_rmr: the registration's)
RT = opt("runtime_t", "runtime", "runtime_t()")
DEV = opt("device_t", "device", "device_t()")

# upstream LCI 2's option of completion objects (paper 3.3.1): true
# delivers an eager active message in a packet (the status's buffer, a user
# packet given back with put_upacket) instead of a copy from the runtime's
# allocator; one above the eager limit still comes from the allocator
ZERO_COPY_AM = opt("bool", "zero_copy_am", "false")

# why get_g_default_attr and set_g_default_attr have no C form
NO_C_GLOBAL_ATTR = ("global_attr_t has no C form; C programs set attributes "
                    "in each allocation's args struct or with LCI_ATTR_*")

# the raw network layer's shared arguments (upstream LCI 2's order)
NO_C_NET = ("upstream LCI 2's raw network layer; net_status_t has no C "
            "form")
NET_SEND_POS = [pos("int", "rank"), pos("void*", "buffer"),
                pos("size_t", "size")]
NET_REMOTE = [pos("uint64_t", "offset"), pos("rmr_t", "rmr")]
NET_OPT = [RT, DEV, opt("endpoint_t", "endpoint", "endpoint_t()"),
           opt("void*", "user_context", "nullptr")]

# the optional arguments of every collective: `comp` makes it nonblocking
# (signalled once with status done and `user_context` when complete);
# `matching_engine` defaults to the runtime's collective engine; `endpoint`
# (upstream LCI 2's) runs it on the endpoint's device (a device given too
# must be that one)
COLL = [RT, DEV,
        opt("matching_engine_t", "matching_engine", "matching_engine_t()"),
        opt("comp_t", "comp", "comp_t()"),
        opt("void*", "user_context", "nullptr"),
        opt("endpoint_t", "endpoint", "endpoint_t()")]
# upstream LCI 2's completion semantic of a nonblocking barrier or
# alltoall: both complete only once every rank's data is in place, which
# satisfies either semantic, so the value is checked and otherwise changes
# nothing
COLL_SEMANTIC = [opt("comp_semantic_t", "comp_semantic",
                     "comp_semantic_t::memory")]

OPS = [
    # runtime lifecycle
    op("alloc_runtime", "runtime_t", attrs_of="runtime",
       doc="allocate a runtime (collective over the bootstrap's ranks)"),
    op("free_runtime", "void", [pos("runtime_t*", "runtime")],
       doc="free a runtime and its default resources"),
    op("g_runtime_init", "runtime_t", attrs_of="runtime",
       doc="allocate the global runtime and return it; when it exists "
       "already, log a warning and return it (this call's attributes are "
       "not applied)"),
    op("g_runtime_fina", "void",
       doc="free the global runtime: each g_runtime_init needs one, the "
       "last one frees it"),
    op("get_g_runtime", "runtime_t", doc="the global runtime (may be empty)"),
    op("global_initialize", "void",
       doc="upstream LCI 2's setup of global state without a runtime: here "
       "it checks the LCI_ATTR_* variables of every resource (a bad one is "
       "a fatal_error now rather than at the first allocation) and counts "
       "the call; nothing needs it"),
    op("global_finalize", "void",
       doc="undo one global_initialize; the last one also forgets the "
       "defaults given to set_g_default_attr"),
    op("get_g_default_attr", "global_attr_t",
       doc="the default of every attribute (the environment over the "
       "built-in defaults, or what set_g_default_attr set)",
       no_c=NO_C_GLOBAL_ATTR),
    op("set_g_default_attr", "void", [pos("global_attr_t", "attr")],
       doc="from now on every allocation takes its unset attributes from "
       "`attr` (the environment is no longer read) until the last "
       "global_finalize",
       no_c=NO_C_GLOBAL_ATTR),
    op("get_rank_me", "int", [RT], doc="rank of this process"),
    op("get_rank_n", "int", [RT], doc="number of ranks"),
    op("is_peer_failed", "bool", [pos("int", "rank"), RT],
       doc="true once this rank knows that rank `rank` failed (its process "
       "died, or it became unreachable): posts naming it throw "
       "peer_failure_error and what was outstanding with it completed with "
       "fatal_peer_failure (docs/RELIABILITY.md, \"Peer failure\"); false "
       "for a live rank and for this rank; a rank out of range is a "
       "fatal_error"),
    # resources
    op("alloc_device", "device_t", [RT, opt("packet_pool_t", "packet_pool",
                                             "packet_pool_t()"),
                                    opt("net_context_t", "net_context",
                                        "net_context_t()")],
       attrs_of="device",
       doc="allocate a device; collective: every rank allocates its devices "
       "in the same order. `net_context` (upstream LCI 2's) must be a "
       "handle on the runtime's network context, the one every device "
       "uses"),
    op("free_device", "void", [pos("device_t*", "device"), RT],
       doc="free a device"),
    op("get_default_device", "device_t", [RT],
       doc="the runtime's default device (empty when alloc_default_device "
       "was false)"),
    op("alloc_packet_pool", "packet_pool_t", [RT], attrs_of="packet_pool",
       doc="allocate a packet pool (give it to alloc_device)"),
    op("free_packet_pool", "void", [pos("packet_pool_t*", "packet_pool"),
                                     RT],
       doc="free a packet pool; the devices it supplies must be freed first"),
    op("get_default_packet_pool", "packet_pool_t", [RT],
       doc="the runtime's default packet pool"),
    op("register_packet_pool", "void",
       [pos("packet_pool_t", "packet_pool"), pos("device_t", "device"), RT],
       doc="record that `device` may carry the packets of `packet_pool` "
       "(upstream LCI 2's registration of the pool's memory with the "
       "device). The backends here send and receive packets without a "
       "memory registration, so any pool's packets already work on any "
       "device and this only checks both handles; registering again is "
       "allowed. A device's own pool (alloc_device) is registered with it "
       "from the start; a device receives into its own pool only"),
    op("deregister_packet_pool", "void",
       [pos("packet_pool_t", "packet_pool"), pos("device_t", "device"), RT],
       doc="undo register_packet_pool (or the registration of the device's "
       "own pool, which it keeps receiving into); a pair that is not "
       "registered is a fatal_error. free_device drops the device's "
       "registrations; free_packet_pool those of the pool"),
    # upstream LCI 2's network contexts and endpoints: handles on the
    # runtime's one network context and on a device's one endpoint
    # (include/lci.hpp, docs/ARCHITECTURE.md)
    op("alloc_net_context", "net_context_t", [RT] + NET_CONTEXT_OPTS +
       NAME_OPTS,
       doc="a new handle on the runtime's network context (a runtime has "
       "one: its libfabric domain or native shm segment; this build cannot "
       "open a second); freed by free_net_context or with the runtime. "
       "Upstream LCI 2's settings of a net context (ofi_provider_name, "
       "max_msg_size, max_inject_size, ibv_gid_idx, "
       "ibv_force_gid_auto_select, ibv_odp_strategy, "
       "ibv_prefetch_strategy) are the runtime's attributes of those names "
       "here: a value set must be the one in force in the runtime's "
       "context (the handle's get_attr_* report it), any other is a "
       "fatal_error naming the runtime attribute to set instead",
       cxx_only=[a.name for a in NET_CONTEXT_OPTS]),
    op("free_net_context", "void", [pos("net_context_t*", "net_context"), RT],
       doc="free a handle of alloc_net_context (the default one goes with "
       "the runtime)"),
    op("get_default_net_context", "net_context_t", [RT],
       doc="the runtime's handle on its network context"),
    op("alloc_endpoint", "endpoint_t", [DEV, RT] + NAME_OPTS,
       doc="a new handle on the device's endpoint (a device has one send "
       "queue and completion queue); posting with .endpoint(e) posts on "
       "e's device; freed by free_endpoint or with the device"),
    op("free_endpoint", "void", [pos("endpoint_t*", "endpoint"), RT],
       doc="free a handle of alloc_endpoint (the default one goes with its "
       "device)"),
    op("get_default_endpoint", "endpoint_t", [DEV, RT],
       doc="the device's handle on its endpoint"),
    op("set_allocator", "void", [pos("allocator_base_t*", "allocator"), RT],
       doc="allocate the buffers of active messages that arrive from now on "
       "with `allocator` (nullptr: the default, std::malloc; the receiver "
       "frees a buffer with the allocator that made it). The allocator must "
       "outlive the runtime's communication; set it before communicating"),
    op("get_allocator", "allocator_base_t*", [RT],
       doc="the allocator of active-message buffers in force (never null: "
       "the default one, std::malloc and std::free, when none was set)"),
    op("get_upacket", "void*",
       [RT, opt("packet_pool_t", "packet_pool", "packet_pool_t()")],
       doc="a packet's payload buffer (get_max_bcopy_size bytes) for the "
       "user to fill and post as the buffer of a send or active message, "
       "which then sends it without a copy and returns it to its pool at "
       "completion; nullptr when the pool is empty. Until a post succeeds "
       "the packet is the caller's (give it back with put_upacket)"),
    op("put_upacket", "void", [pos("void*", "packet"), RT],
       doc="return a packet from get_upacket that was not posted"),
    op("get_max_bcopy_size", "size_t",
       [RT, opt("packet_pool_t", "packet_pool", "packet_pool_t()")],
       doc="largest payload sent with the eager (buffer-copy) protocol on "
       "every route (a packet's payload); a route whose backend carries "
       "larger messages without a packet (native shm, alone or under "
       "hybrid) sends eagerly up to 16392 bytes, or this if larger"),
    op("alloc_matching_engine", "matching_engine_t", [
        RT, opt("matching_engine_make_key_t", "make_key", "nullptr")],
       attrs_of="matching_engine",
       doc="allocate a matching engine; `make_key` (optional) replaces the "
       "built-in key of (rank, tag, policy)"),
    op("free_matching_engine", "void",
       [pos("matching_engine_t*", "matching_engine"), RT],
       doc="free a matching engine"),
    op("get_default_matching_engine", "matching_engine_t", [RT],
       doc="the matching engine that sends and receives use by default"),
    op("matching_engine_insert", "matching_entry_val_t", [
        pos("matching_engine_t", "matching_engine"),
        pos("matching_entry_key_t", "key"),
        pos("matching_entry_val_t", "value"),
        pos("matching_entry_type_t", "entry_type"), RT],
       doc="store `value` under `key` (returns nullptr) or, when an entry of "
       "the other type waits under `key`, remove and return the oldest; for "
       "engines the library does not also use for messages"),
    # completion objects
    op("alloc_sync", "comp_t", [RT, ZERO_COPY_AM], attrs_of="sync",
       doc="a synchronizer: ready once it received `threshold` signals "
       "(sync_test, sync_wait)"),
    op("sync_test", "bool", [pos("comp_t", "comp"), pos("status_t*", "p_out"),
                             RT],
       doc="true once `threshold` signals arrived; copies them to p_out "
       "(may be null) and resets the synchronizer",
       cxx_only=["runtime"]),
    op("sync_wait", "void", [pos("comp_t", "comp"), pos("status_t*", "p_out"),
                             opt("bool", "do_progress", "true"), DEV, RT],
       doc="wait until sync_test succeeds, driving progress on `device` "
       "(default device when unset) unless do_progress is false"),
    op("alloc_cq", "comp_t", [RT, ZERO_COPY_AM], attrs_of="cq",
       doc="a completion queue: every signal pushes its status, cq_pop "
       "takes them out; any thread may push and pop"),
    op("cq_pop", "status_t", [pos("comp_t", "comp"), RT],
       doc="the oldest status, done (or its error when the operation "
       "failed: fatal_peer_failure), or retry when empty",
       cxx_only=["runtime"]),
    op("alloc_handler", "comp_t", [pos("comp_handler_t", "handler"), RT,
                                   ZERO_COPY_AM] + NAME_OPTS,
       doc="a completion handler: every signal calls handler(status) in "
       "the thread that signals (usually one in progress); keep it short"),
    op("alloc_counter", "comp_t", [RT] + NAME_OPTS,
       doc="a counter: every signal adds one (the statuses are dropped)"),
    op("counter_get", "int64_t", [pos("comp_t", "comp"), RT],
       doc="the counter's value",
       cxx_only=["runtime"]),
    op("counter_set", "void", [pos("comp_t", "comp"), pos("int64_t", "value"),
                               RT],
       doc="set the counter's value",
       cxx_only=["runtime"]),
    op("comp_signal", "void", [pos("comp_t", "comp"), pos("status_t", "status"),
                               RT],
       doc="signal a completion object with `status`, as a completed "
       "operation would",
       cxx_only=["runtime"]),
    op("free_comp", "void", [pos("comp_t*", "comp"), RT],
       doc="free a completion object (nothing may still signal it)",
       cxx_only=["runtime"]),
    op("alloc_graph", "comp_t", [opt("comp_t", "comp", "comp_t()"), RT]
       + NAME_OPTS,
       doc="a completion graph: nodes run when their predecessors are "
       "complete; `comp` (optional) is signalled when the whole graph is"),
    op("graph_add_node", "graph_node_t", [
        pos("comp_t", "graph"), pos("graph_node_run_cb_t", "fn"),
        opt("void*", "value", "nullptr"),
        opt("graph_node_free_cb_t", "free_cb", "nullptr"), RT],
       doc="add a node running fn(value): done = complete now, posted = "
       "complete when the graph is signalled with user_context == the node",
       cxx_only=["runtime"]),
    op("graph_add_edge", "void", [
        pos("comp_t", "graph"), pos("graph_node_t", "src"),
        pos("graph_node_t", "dst"),
        opt("graph_edge_run_cb_t", "fn", "nullptr"), RT],
       doc="dst runs after src completes (GRAPH_START / GRAPH_END allowed); "
       "fn(src status, src value, dst value) runs in between",
       cxx_only=["runtime"]),
    op("graph_node_mark_complete", "void", [
        pos("graph_node_t", "node"),
        opt("status_t", "status", "status_t(errorcode_t::done)"), RT],
       doc="complete a posted node by hand",
       cxx_only=["runtime"]),
    op("graph_start", "void", [pos("comp_t", "graph"), RT],
       doc="run the graph from its sources (again, after it completed)",
       cxx_only=["runtime"]),
    op("graph_test", "status_t", [pos("comp_t", "graph"), RT],
       doc="done once every node completed (the first error code when a node completed with a failure), else retry",
       cxx_only=["runtime"]),
    op("register_rcomp", "rcomp_t", [pos("comp_t", "comp"), RT,
                                     opt("rcomp_t", "rcomp", "RCOMP_NULL")],
       doc="give a completion object a handle that peers can target; every "
       "rank registers in the same order, so handles agree. With `rcomp`: "
       "that handle, which reserve_rcomps reserved (or a deregistered one); "
       "a handle in use or never reserved is a fatal_error"),
    op("reserve_rcomps", "rcomp_t", [pos("rcomp_t", "n"), RT],
       doc="reserve n consecutive remote completion handles and return the "
       "first; register_rcomp_x(comp).rcomp(first + i) fills one. Every "
       "rank reserves and registers in the same order, so handles agree",
       no_c="upstream LCI 2's interface; C programs register in order"),
    op("deregister_rcomp", "void", [pos("rcomp_t", "rcomp"), RT],
       doc="withdraw a handle from register_rcomp"),
    # memory registration
    op("register_memory", "mr_t", [pos("void*", "address"),
                                   pos("size_t", "size"), RT, DEV],
       doc="register [address, address + size) with the runtime's network "
       "context (valid on every device of the runtime; `device`, upstream "
       "LCI's per-device registration, is checked to be a live device of "
       "the runtime)"),
    op("deregister_memory", "void", [pos("mr_t*", "mr"), RT],
       doc="deregister; peers must no longer access the region"),
    op("get_rmr", "rmr_t", [pos("mr_t", "mr"), RT],
       doc="the plain struct a peer needs to put into or get from the "
       "region",
       cxx_only=["runtime"]),
    # communication
    op("post_comm", "status_t", [
        pos("direction_t", "direction"), pos("int", "rank"),
        pos("void*", "local_buffer"), pos("size_t", "size"),
        pos("comp_t", "local_comp"),
        RT, DEV,
        opt("packet_pool_t", "packet_pool", "packet_pool_t()"),
        opt("matching_engine_t", "matching_engine", "matching_engine_t()"),
        opt("mr_t", "mr", "mr_t()"),
        opt("uint64_t", "remote_disp", "0"),
        opt("rmr_t", "rmr", "RMR_NULL"),
        opt("tag_t", "tag", "0"),
        opt("rcomp_t", "remote_comp", "RCOMP_NULL"),
        opt("void*", "user_context", "nullptr"),
        opt("matching_policy_t", "matching_policy",
            "matching_policy_t::rank_tag"),
        opt("bool", "allow_done", "true"),
        opt("bool", "allow_posted", "true"),
        opt("bool", "allow_retry", "true"),
        opt("comp_semantic_t", "comp_semantic", "comp_semantic_t::memory"),
        opt("endpoint_t", "endpoint", "endpoint_t()"),
        opt("buffers_t", "buffers", "buffers_t()"),
        opt("rbuffers_t", "rbuffers", "rbuffers_t()"),
    ], doc="the generic posting operation (Table 1 of the paper); "
       "`comp_semantic` (OUT only): memory = complete when the local buffer "
       "may be reused, network = when the network layer reports the message "
       "complete; `endpoint` (upstream LCI 2's): post on its device (the "
       "device given, if any, must be that one); `buffers` (paper 3.3.1): "
       "a list of at most MAX_BUFFERS local buffers instead of "
       "local_buffer and size (then nullptr and 0), sent as one message, "
       "received into the list in order, or (with `rbuffers`, one remote "
       "buffer per local one, or with `rmr`: consecutive from remote_disp) "
       "put or got buffer by buffer; the list completes once, with buffer "
       "= the first buffer's base and size = the total bytes",
       # sends, receives and active messages with a device, a tag and a
       # user context take the lean entry (src/core/post.cpp)
       lean=["device", "tag", "remote_comp", "user_context"]),
    op("post_send", "status_t", [
        pos("int", "rank"), pos("void*", "local_buffer"), pos("size_t", "size"),
        pos("tag_t", "tag"), pos("comp_t", "local_comp")],
       sugar=("post_comm", {"direction": "direction_t::OUT",
                            "remote_comp": "RCOMP_NULL"}),
       doc="post_comm(OUT, ...) with a tag and no remote completion"),
    op("post_recv", "status_t", [
        pos("int", "rank"), pos("void*", "local_buffer"), pos("size_t", "size"),
        pos("tag_t", "tag"), pos("comp_t", "local_comp")],
       sugar=("post_comm", {"direction": "direction_t::IN",
                            "remote_comp": "RCOMP_NULL"}),
       doc="post_comm(IN, ...) with a tag"),
    op("post_am", "status_t", [
        pos("int", "rank"), pos("void*", "local_buffer"), pos("size_t", "size"),
        pos("comp_t", "local_comp"), pos("rcomp_t", "remote_comp")],
       sugar=("post_comm", {"direction": "direction_t::OUT",
                            "matching_engine": "matching_engine_t()",
                            "matching_policy": "matching_policy_t::rank_tag"}),
       doc="post_comm(OUT, ...) with a remote completion: an active message"),
    op("post_put", "status_t", [
        pos("int", "rank"), pos("void*", "local_buffer"), pos("size_t", "size"),
        pos("comp_t", "local_comp"), pos("uint64_t", "remote_disp"),
        pos("rmr_t", "rmr")],
       sugar=("post_comm", {"direction": "direction_t::OUT"}),
       doc="post_comm(OUT, ...) with a remote buffer: RMA put (with "
       ".remote_comp(): put with signal)"),
    op("post_get", "status_t", [
        pos("int", "rank"), pos("void*", "local_buffer"), pos("size_t", "size"),
        pos("comp_t", "local_comp"), pos("uint64_t", "remote_disp"),
        pos("rmr_t", "rmr")],
       sugar=("post_comm", {"direction": "direction_t::IN"}),
       doc="post_comm(IN, ...) with a remote buffer: RMA get (with "
       ".remote_comp(): get with signal)"),
    # collectives (src/coll, docs/COLLECTIVES.md): blocking unless `comp`
    # is given; every rank calls the collectives of one matching engine in
    # the same order
    op("barrier", "void", COLL + COLL_SEMANTIC,
       doc="dissemination barrier over the runtime's ranks"),
    op("broadcast", "void", [
        pos("void*", "buffer"), pos("size_t", "size"), pos("int", "root")]
       + COLL + [opt("broadcast_algorithm_t", "algorithm",
                     "broadcast_algorithm_t::none")],
       doc="copy root's `size` bytes at `buffer` into every rank's buffer"),
    op("reduce", "void", [
        pos("const void*", "sendbuf"), pos("void*", "recvbuf"),
        pos("size_t", "count"), pos("size_t", "item_size"),
        pos("reduce_op_t", "op"), pos("int", "root")] + COLL,
       doc="root's recvbuf = op over every rank's `count` items of "
       "`item_size` bytes (binomial tree); recvbuf is used at root only "
       "and may equal sendbuf"),
    op("allreduce", "void", [
        pos("const void*", "sendbuf"), pos("void*", "recvbuf"),
        pos("size_t", "count"), pos("size_t", "item_size"),
        pos("reduce_op_t", "op")]
       + COLL + [opt("allreduce_algorithm_t", "algorithm",
                     "allreduce_algorithm_t::none")],
       doc="every rank's recvbuf = op over every rank's sendbuf (recvbuf "
       "may equal sendbuf); every rank gets the same bytes"),
    op("reduce_scatter", "void", [
        pos("const void*", "sendbuf"), pos("void*", "recvbuf"),
        pos("size_t", "recvcount"), pos("size_t", "item_size"),
        pos("reduce_op_t", "op")]
       + COLL + [opt("reduce_scatter_algorithm_t", "algorithm",
                     "reduce_scatter_algorithm_t::none")],
       doc="sendbuf holds rank_n blocks of `recvcount` items; rank i's "
       "recvbuf = op over every rank's block i (recvbuf may be this rank's "
       "block of sendbuf, or overlap it otherwise)"),
    op("allgather", "void", [
        pos("const void*", "sendbuf"), pos("void*", "recvbuf"),
        pos("size_t", "size")]
       + COLL + [opt("allgather_algorithm_t", "algorithm",
                     "allgather_algorithm_t::none")],
       doc="recvbuf (rank_n x size bytes) = every rank's `size` bytes, in "
       "rank order (sendbuf may be this rank's block of recvbuf, or "
       "overlap it otherwise)"),
    op("alltoall", "void", [
        pos("const void*", "sendbuf"), pos("void*", "recvbuf"),
        pos("size_t", "size")] + COLL + COLL_SEMANTIC,
       doc="block j (size bytes) of rank i's sendbuf lands in block i of "
       "rank j's recvbuf (recvbuf may equal sendbuf)"),
    # upstream LCI 2's raw network layer (src/core/net_post.cpp,
    # docs/ARCHITECTURE.md "The raw network layer"): operations straight on
    # a device's backend endpoint, completed through net_poll_cq. A device
    # is either the library's (post_*, progress) or raw: a raw receive needs
    # a device that pre-posts none (net_max_recvs 0)
    op("net_poll_cq", "size_t", [
        pos("size_t", "max_polls"), pos("net_status_t*", "statuses"), RT, DEV],
       doc="up to max_polls completed raw operations of the device into "
       "statuses (may be null: consumed, not reported); returns how many. "
       "Operations that completed in their posting call come first. Only "
       "for a raw device: never progress it",
       no_c=NO_C_NET),
    op("net_post_recv", "error_t", [
        pos("void*", "buffer"), pos("size_t", "size"), pos("mr_t", "mr"), RT,
        DEV, opt("void*", "user_context", "nullptr")],
       doc="post a receive buffer for the next message from any peer (a RECV "
       "completion, its length, rank -1); the device must pre-post no "
       "receives of its own (net_max_recvs 0). posted or retry",
       no_c=NO_C_NET),
    op("net_post_sends", "error_t", NET_SEND_POS + NET_OPT +
       [opt("net_imm_data_t", "imm_data", "0")],
       doc="send `size` bytes, copied at once (inject): done, no "
       "completion; size at most the route's copy limit. imm_data must be 0 "
       "(these backends carry immediate data with RDMA writes only)",
       no_c=NO_C_NET),
    op("net_post_send", "error_t", NET_SEND_POS + [pos("mr_t", "mr")] +
       NET_OPT + [opt("net_imm_data_t", "imm_data", "0")],
       doc="send the buffer: posted (a SEND completion when it may be "
       "reused) or retry; imm_data must be 0, as for net_post_sends",
       no_c=NO_C_NET),
    op("net_post_puts", "error_t", NET_SEND_POS + NET_REMOTE + NET_OPT,
       doc="RDMA write of at most max_inject_size bytes into the peer's "
       "region `rmr` at `offset`, the buffer copied at once: done, no "
       "completion",
       no_c=NO_C_NET),
    op("net_post_put", "error_t", NET_SEND_POS + [pos("mr_t", "mr")] +
       NET_REMOTE + NET_OPT,
       doc="RDMA write into the peer's region `rmr` at `offset`: posted (a "
       "WRITE completion once the buffer may be reused) or retry",
       no_c=NO_C_NET),
    op("net_post_putImms", "error_t", NET_SEND_POS + NET_REMOTE + NET_OPT +
       [opt("net_imm_data_t", "imm_data", "0")],
       doc="net_post_puts that also delivers imm_data to the target's "
       "net_poll_cq as a REMOTE_WRITE once the data is there (the backend "
       "must offer immediate data: net context attribute support_putimm)",
       no_c=NO_C_NET),
    op("net_post_putImm", "error_t", NET_SEND_POS + [pos("mr_t", "mr")] +
       NET_REMOTE + NET_OPT + [opt("net_imm_data_t", "imm_data", "0")],
       doc="net_post_put that also delivers imm_data to the target as a "
       "REMOTE_WRITE completion (support_putimm)",
       no_c=NO_C_NET),
    op("net_post_get", "error_t", NET_SEND_POS + [pos("mr_t", "mr")] +
       NET_REMOTE + NET_OPT,
       doc="RDMA read of the peer's region `rmr` at `offset` into the "
       "buffer: posted (a READ completion once the data is there) or retry",
       no_c=NO_C_NET),
    op("progress", "error_t", [RT, DEV,
                               opt("endpoint_t", "endpoint", "endpoint_t()")],
       doc="make progress on a device (with `endpoint`, upstream LCI 2's: "
       "on its device): done if it did work, retry if not"),
    op("test_drained", "error_t", [RT, DEV],
       doc="done when nothing the device posted still waits for the network "
       "(no send in flight, empty backlog; posted receives do not count), "
       "else retry; makes no progress"),
    op("wait_drained", "void", [RT, DEV],
       doc="make progress on the device until test_drained is done"),
]
