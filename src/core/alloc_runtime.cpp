// alloc_runtime, free_runtime and the global runtime. They are core code,
// not resource code: a runtime's setup resolves the wire protocol's limits
// (rendezvous protocol, inject size over the message header), starts peer
// failure detection and opens the node-local collective team; its free
// drains every device and drops the early sends.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/coll_support.hpp"
#include "core/peer_failure.hpp"
#include "core/progress.hpp"
#include "core/protocol.hpp"
#include "net/node.hpp"
#include "resource/device.hpp"
#include "resource/endpoint.hpp"
#include "resource/globals.hpp"
#include "resource/matching_engine.hpp"
#include "resource/packet_pool.hpp"
#include "resource/runtime.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace lci
{
namespace
{

// A runtime's shared value: rank 0 draws it, everybody takes rank 0's.
// Never 0 (the runtime of an empty rmr). The same allgather carries every
// rank's process description (peer failure detection) and node id (which
// peers the native shm backend serves: net/node.hpp).
uint32_t agree_on_tag(bootstrap::backend_t& boot, const std::string& node,
                      std::vector<process_desc_t>* procs,
                      std::vector<std::string>* nodes)
{
  static std::atomic<uint32_t> counter{0};
  uint32_t mine = 0;
  if (boot.rank_me() == 0) {
    uint64_t x =
        static_cast<uint64_t>(
            std::chrono::steady_clock::now().time_since_epoch().count()) ^
        (static_cast<uint64_t>(::getpid()) << 32) ^
        (static_cast<uint64_t>(counter.fetch_add(1)) * 0x9E3779B97F4A7C15ull);
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 32;
    mine = static_cast<uint32_t>(x) | 1u;
  }
  struct slot_t {
    uint32_t tag;
    uint32_t pad;
    process_desc_t proc;
    char node[128];
  };
  slot_t slot{};
  slot.tag = mine;
  slot.proc = describe_self();
  node.copy(slot.node, sizeof(slot.node) - 1);
  std::vector<slot_t> all(boot.rank_n());
  boot.allgather(&slot, all.data(), sizeof(slot));
  procs->resize(all.size());
  nodes->resize(all.size());
  for (size_t r = 0; r < all.size(); ++r) {
    (*procs)[r] = all[r].proc;
    all[r].node[sizeof(all[r].node) - 1] = '\0';
    (*nodes)[r] = all[r].node;
  }
  return all[0].tag;
}

// Everything a runtime holds besides its default resources: the bootstrap,
// the tag and peer descriptions every rank agrees on, the network context,
// the node-local collective team, and the protocol limits in force (which
// the attributes then report).
void setup_runtime(runtime_impl_t* rt)
{
  if (rt->attr.max_tag == ANY_TAG)
    util::throw_fatal("alloc_runtime: max_tag ", rt->attr.max_tag,
                      " would include ANY_TAG");
  // every message header carries the whole tag and remote completion
  // handle, puts with a signal included: no smaller "immediate" limits
  rt->attr.max_imm_tag = rt->attr.max_tag;
  rt->attr.max_rcomp = msg_header_t::kAuxMax;
  rt->attr.max_imm_rcomp = rt->attr.max_rcomp;
  const std::string requested = rt->attr.bootstrap_backend;
  try {
    rt->bootstrap = bootstrap::get_backend(rt->attr.bootstrap_backend);
  } catch (const fatal_error&) {
    throw;
  } catch (const std::exception& e) {
    util::throw_fatal("alloc_runtime: ", e.what());
  }
  // the attribute reports the backend in force
  rt->attr.bootstrap_backend = rt->bootstrap->name();
  rt->bootstrap->set_timeout(static_cast<unsigned>(
      std::min<size_t>(rt->attr.bootstrap_timeout, 100000000)));
  rt->rank_me = rt->bootstrap->rank_me();
  rt->rank_n = rt->bootstrap->rank_n();
  util::log_set_rank(rt->rank_me);
  LCI_LOG(info, "bootstrap ", rt->bootstrap->name(), ": rank ", rt->rank_me,
          " of ", rt->rank_n, " (requested ", requested,
          "; the environment selects ", bootstrap::describe_detection(), ")");
  std::vector<process_desc_t> procs;
  std::vector<std::string> nodes;
  rt->tag = agree_on_tag(*rt->bootstrap, net::node_id(rt->attr, rt->rank_me),
                         &procs, &nodes);
  init_peer_tracking(rt, procs.data());
  rt->net_context =
      net::alloc_context(rt->attr, rt->rank_me, rt->rank_n, nodes);
  // the node-local collectives, or their hierarchical form across nodes
  // (every rank opens the team or none does)
  if (rt->attr.coll_shm) {
    std::unique_ptr<coll::team_base_t> team = coll::open_node_team(
        *rt->bootstrap, rt->rank_me, rt->rank_n, nodes,
        [](void* ctx, int r) {
          return peer_is_failed(static_cast<runtime_impl_t*>(ctx), r);
        },
        rt);
    if (team)
      rt->coll_team = {team.release(), [](coll::team_base_t* t) { delete t; }};
  }
  const net::caps_t& caps = rt->net_context->caps();
  rt->attr.backend = caps.backend;  // auto: the backend in force
  // and the provider in force (auto without libfabric: every rank is on
  // this machine, where auto means shm)
  if (!caps.ofi_provider.empty())
    rt->attr.ofi_provider_name = caps.ofi_provider;
  else if (rt->attr.ofi_provider_name == "auto")
    rt->attr.ofi_provider_name = "shm";
  // rendezvous: auto = write with immediate data when the backend has it,
  // and split on the routes where it applies (the attribute then reports
  // the protocol of the other routes)
  switch (rt->attr.rdv_protocol) {
    case attr_rdv_protocol_t::write:
      rt->rdv_protocol = static_cast<uint32_t>(rdv_protocol_t::write);
      break;
    case attr_rdv_protocol_t::get:
      rt->rdv_protocol = static_cast<uint32_t>(rdv_protocol_t::get);
      break;
    case attr_rdv_protocol_t::writeimm:
      rt->rdv_protocol = static_cast<uint32_t>(rdv_protocol_t::writeimm);
      break;
    case attr_rdv_protocol_t::auto_select:
      rt->rdv_protocol = static_cast<uint32_t>(caps.imm_data_size >= 4
                                                   ? rdv_protocol_t::writeimm
                                                   : rdv_protocol_t::write);
      // (split writes its head with immediate data)
      rt->rdv_split = caps.imm_data_size >= 4;
      break;
    default:
      util::throw_fatal("alloc_runtime: rdv_protocol ",
                        static_cast<int>(rt->attr.rdv_protocol),
                        " is not a value of attr_rdv_protocol_t");
  }
  if (rt->rdv_protocol == static_cast<uint32_t>(rdv_protocol_t::writeimm) &&
      caps.rma && caps.imm_data_size < 4)
    util::throw_fatal(
        "alloc_runtime: rdv_protocol writeimm needs immediate "
        "data, which the provider ",
        caps.provider, " does not deliver");
  static const attr_rdv_protocol_t kInForce[] = {
      attr_rdv_protocol_t::auto_select, attr_rdv_protocol_t::write,
      attr_rdv_protocol_t::writeimm, attr_rdv_protocol_t::get};
  rt->attr.rdv_protocol = kInForce[rt->rdv_protocol];
  rt->max_rma_size = caps.max_msg_size;
  if (rt->attr.max_msg_size != 0 && rt->attr.max_msg_size < rt->max_rma_size)
    rt->max_rma_size = rt->attr.max_msg_size;
  rt->attr.max_msg_size = rt->max_rma_size;
  size_t inject = rt->net_context->caps().max_inject_size;
  size_t wanted = rt->attr.max_inject_size + sizeof(msg_header_t);
  rt->max_inject_wire =
      std::min({inject, wanted, static_cast<size_t>(kMaxInjectWire)});
  if (rt->max_inject_wire < sizeof(msg_header_t)) rt->max_inject_wire = 0;
  // the attribute reports the inject limit in force
  rt->attr.max_inject_size =
      rt->max_inject_wire ? rt->max_inject_wire - sizeof(msg_header_t) : 0;
  LCI_LOG(info, "network backend ", caps.backend,
          caps.provider.empty() ? "" : " (provider ", caps.provider,
          caps.provider.empty() ? "" : ")", "; inject up to ",
          rt->attr.max_inject_size, " B, eager up to ",
          rt->attr.packet_size - sizeof(msg_header_t),
          " B, larger by rendezvous (",
          get_attr_rdv_protocol_str(rt->attr.rdv_protocol), "); largest RMA ",
          rt->max_rma_size, " B");
}

}  // namespace

runtime_t alloc_runtime_x::call_impl(const runtime_attr_t& attr)
{
  detail::check_runtime_enums(attr, "alloc_runtime");
  // upstream LCI 2's split of its 32-bit immediate data: nothing here
  // depends on it (every header carries the whole tag and handle), but a
  // split upstream refuses is refused too
  if (attr.imm_nbits_tag < 0 || attr.imm_nbits_rcomp < 0 ||
      attr.imm_nbits_tag + attr.imm_nbits_rcomp > 31)
    util::throw_fatal("alloc_runtime: imm_nbits_tag (", attr.imm_nbits_tag,
                      ") and imm_nbits_rcomp (", attr.imm_nbits_rcomp,
                      ") must be at least 0 and sum to at most 31, the bits "
                      "of immediate data they share");
  auto* rt = new runtime_impl_t(attr);
  try {
    setup_runtime(rt);
  } catch (...) {
    delete rt;
    throw;
  }
  runtime_t runtime(rt);
  // live from here: the default resources are allocated with it
  globals::runtimes().add(rt);
  try {
    rt->default_pool = alloc_packet_pool_x()
                           .runtime(runtime)
                           .packet_size(attr.packet_size)
                           .npackets(attr.npackets)()
                           .p_impl;
    rt->default_me = alloc_matching_engine_x().runtime(runtime)().p_impl;
    rt->coll_me =
        alloc_matching_engine_x().runtime(runtime).num_buckets(1024)().p_impl;
    if (attr.alloc_default_device) {
      alloc_device_x dx;
      dx.runtime(runtime);
      // no default pool, upstream's way of keeping the default device's
      // messages for raw receives: here, no pre-posted receives
      if (!attr.alloc_default_packet_pool) dx.net_max_recvs(0);
      rt->default_device = dx().p_impl;
    }
  } catch (...) {
    if (rt->default_device) {
      device_t d(rt->default_device);
      free_device_x(&d).runtime(runtime)();
    }
    if (rt->coll_me) {
      matching_engine_t m(rt->coll_me);
      free_matching_engine_x(&m).runtime(runtime)();
    }
    if (rt->default_me) {
      matching_engine_t m(rt->default_me);
      free_matching_engine_x(&m).runtime(runtime)();
    }
    if (rt->default_pool) {
      packet_pool_t p(rt->default_pool);
      free_packet_pool_x(&p).runtime(runtime)();
    }
    globals::runtimes().remove(rt, "alloc_runtime", "runtime");
    delete rt;
    // a default resource refused the runtime's attributes: say which call
    try {
      throw;
    } catch (const peer_failure_error&) {
      throw;
    } catch (const fatal_error& e) {
      throw fatal_error(std::string("alloc_runtime: ") + e.what());
    }
  }
  return runtime;
}

namespace
{
// Without a usable bootstrap (the program finalized the MPI that LCI
// bootstraps through, or that took the PMI connection over), the devices
// freed below cannot meet at a bootstrap barrier. They meet here instead,
// over the network, while the runtime can still run a collective: every
// device drained first, so that no message of this runtime is in flight
// anywhere once the barrier completes.
void sync_before_free(runtime_impl_t* rt, runtime_t runtime)
{
  // a stale handle is reported by the registry's remove, not read here
  if (!globals::runtimes().contains(rt) || rt->bootstrap->usable() ||
      rt->nfailed.load(std::memory_order_relaxed) != 0)
    return;
  device_t first;
  for (size_t i = 0; i < rt->devices.size(); ++i) {
    device_impl_t* dev = rt->devices.get(i, nullptr);
    if (!dev) continue;
    drain_device(dev);
    if (first.is_empty()) first = device_t(dev);
  }
  if (first.is_empty()) return;
  barrier_x().runtime(runtime).device(first)();
  rt->peers_synced_at_free = true;
}
}  // namespace

void free_runtime_x::call_impl(runtime_t* runtime)
{
  const char* call = "free_runtime";
  if (!runtime) util::throw_fatal(call, ": null runtime pointer");
  runtime_impl_t* rt = util::checked(runtime->p_impl, call);
  sync_before_free(rt, *runtime);
  globals::runtimes().remove(rt, call, "runtime");
  release_net_contexts(rt);
  if (globals::g_runtime().p_impl == rt) {
    globals::g_runtime() = runtime_t();
    globals::g_runtime_refs() = 0;
  }
  // the devices and matching engines the user did not free go with the
  // runtime (in index order, the same on every rank: freeing a device is
  // collective), so that no live handle points into a freed runtime: a
  // later use or free of one is an error, not a crash
  for (size_t i = 0; i < rt->devices.size(); ++i) {
    device_t d(rt->devices.get(i, nullptr));
    if (!d.is_empty()) free_device(&d);
  }
  drop_early_sends(rt);
  for (size_t i = 0; i < rt->matching_engines.size(); ++i) {
    matching_engine_t m(rt->matching_engines.get(i, nullptr));
    if (!m.is_empty()) free_matching_engine(&m);
  }
  if (rt->default_pool && globals::packet_pools().contains(rt->default_pool)) {
    packet_pool_t p(rt->default_pool);
    free_packet_pool(&p);
  }
  // regions the user did not deregister go with the runtime (a later
  // deregister_memory of one is an error, not a crash)
  rt->mrs.release_all();
  release_failed_ops(rt);
  delete rt;
  runtime->p_impl = nullptr;
  bootstrap::release_shared_pmix();
}

// A second g_runtime_init keeps the global runtime, as upstream LCI does
// (a library and its application may both initialize it), with a warning,
// since the attributes of that call are not applied. Each call then needs
// its g_runtime_fina: the runtime is freed by the last one, so no layer
// frees it under another that still uses it.
runtime_t g_runtime_init_x::call_impl(const runtime_attr_t& attr)
{
  if (!globals::g_runtime().is_empty()) {
    ++globals::g_runtime_refs();
    LCI_LOG(warn,
            "g_runtime_init: the global runtime is already initialized; "
            "keeping it (this call's attributes are not applied; it needs its "
            "own g_runtime_fina)");
    return globals::g_runtime();
  }
  globals::g_runtime() = alloc_runtime_x::call_impl(attr);
  globals::g_runtime_refs() = 1;
  return globals::g_runtime();
}

void g_runtime_fina_x::call_impl()
{
  if (globals::g_runtime().is_empty())
    util::throw_fatal(
        "g_runtime_fina: the global runtime is not "
        "initialized (finalized twice?)");
  if (--globals::g_runtime_refs() > 0) return;
  runtime_t rt = globals::g_runtime();
  free_runtime_x::call_impl(&rt);
}

runtime_t get_g_runtime_x::call_impl() { return globals::g_runtime(); }

}  // namespace lci
