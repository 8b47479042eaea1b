// alloc_device and free_device: the collective parts of a device's life.
// They are core code, not resource code: allocation pre-posts the receives
// by progressing the new device, and the free drains it, meets the peers
// at a barrier while it goes on polling (progress_during) and fails the
// sends a peer failure left behind (release_failed_sends).
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "core/peer_failure.hpp"
#include "core/progress.hpp"
#include "core/send_comp.hpp"
#include "resource/device.hpp"
#include "resource/endpoint.hpp"
#include "resource/globals.hpp"
#include "resource/packet_pool.hpp"
#include "resource/runtime.hpp"
#include "util/error.hpp"

namespace lci
{
namespace
{

// Runs a bootstrap operation; its errors (a lost process manager, a rank
// that exited) become fatal_error naming `call`.
template <typename F>
void via_bootstrap(const char* call, F&& op)
{
  try {
    op();
  } catch (const fatal_error&) {
    throw;
  } catch (const std::exception& e) {
    util::throw_fatal(call, ": ", e.what());
  }
}

// Every rank's address of this device, exchanged through the bootstrap in
// fixed-size slots: [length byte][address bytes].
std::vector<std::string> exchange_addresses(runtime_impl_t* rt,
                                            const std::string& mine)
{
  constexpr size_t kSlot = 256;
  if (mine.size() >= kSlot)
    util::throw_fatal("alloc_device: a ", mine.size(),
                      "-byte network address does not fit the exchange");
  char slot[kSlot] = {};
  slot[0] = static_cast<char>(mine.size());
  std::memcpy(slot + 1, mine.data(), mine.size());
  std::vector<char> all(kSlot * rt->rank_n);
  via_bootstrap("alloc_device",
                [&] { rt->bootstrap->allgather(slot, all.data(), kSlot); });
  std::vector<std::string> addrs(rt->rank_n);
  for (int r = 0; r < rt->rank_n; ++r) {
    const char* s = all.data() + r * kSlot;
    addrs[r].assign(s + 1, static_cast<unsigned char>(s[0]));
  }
  return addrs;
}

// The collective part of alloc_device: the network device, connected to
// the same device of every rank, with its receives pre-posted.
void connect_device(runtime_impl_t* rt, device_impl_t* dev)
{
  std::lock_guard<std::mutex> guard(rt->collective_mu);
  // a raw device (no pre-posted receives) still needs a receive queue for
  // net_post_recv: as deep as its send queue
  device_attr_t net_attr = dev->attr;
  if (net_attr.net_max_recvs == 0)
    net_attr.net_max_recvs = net_attr.net_max_sends;
  dev->net = net::link_t(rt->net_context->alloc_device(net_attr));
  dev->net.connect(exchange_addresses(rt, dev->net.get_address()),
                   rt->max_inject_wire);
  dev->recv_target = dev->net.needs_recvs()
                         ? static_cast<int64_t>(dev->attr.net_max_recvs)
                         : 0;
  progress_device(dev);  // pre-posts the receives (if the backend needs any)
  // nobody sends to this device before every rank has posted its receives
  via_bootstrap("alloc_device", [&] { rt->bootstrap->barrier(); });
  dev->net.connected();
}

}  // namespace

device_t alloc_device_x::call_impl(runtime_t runtime, packet_pool_t packet_pool,
                                   net_context_t net_context,
                                   const device_attr_t& attr)
{
  runtime_impl_t* rt = resolve_runtime(runtime, "alloc_device");
  detail::check_device_enums(attr, "alloc_device");
  if (!(attr.net_send_reserved_pct >= 0.0 && attr.net_send_reserved_pct <= 1.0))
    util::throw_fatal("alloc_device: net_send_reserved_pct ",
                      attr.net_send_reserved_pct,
                      " is not a fraction between 0 and 1");
  if (!net_context.is_empty()) {
    globals::net_contexts().check(net_context.p_impl, "alloc_device",
                                  "net context");
    if (net_context.p_impl->runtime != rt)
      util::throw_fatal(
          "alloc_device: the net context is of another runtime (a device "
          "uses its runtime's network context)");
  }
  packet_pool_impl_t* pool = packet_pool.p_impl
                                 ? checked_pool(packet_pool, "alloc_device")
                                 : rt->default_pool;
  if (!pool)
    util::throw_fatal(
        "alloc_device: no packet pool given and the runtime "
        "has none");
  auto* dev = new device_impl_t(rt, pool, attr);
  try {
    connect_device(rt, dev);
  } catch (...) {
    delete dev;
    throw;
  }
  dev->index = rt->devices.push_back(dev);
  globals::devices().add(dev);
  return device_t(dev);
}

void free_device_x::call_impl(device_t* device, runtime_t)
{
  const char* call = "free_device";
  if (!device) util::throw_fatal(call, ": null device pointer");
  device_impl_t* dev = util::checked(device->p_impl, call);
  // the registry names a stale handle; nothing is read from it before
  globals::devices().check(dev, call, "device");
  runtime_impl_t* rt = dev->runtime;
  // The process manager is no longer ours to use (the program finalized
  // the MPI that LCI bootstraps through, or that took the PMI connection
  // over): the collective end goes over the network, on this device, while
  // it is still whole. Drained first (the bootstrap-barrier path drains too),
  // so that nothing posted earlier trails the barrier's messages.
  bool over_network = rt->nfailed.load(std::memory_order_relaxed) == 0 &&
                      !rt->bootstrap->usable();
  if (over_network && !rt->peers_synced_at_free) {
    drain_device(dev);
    device_t self = *device;
    barrier_x().runtime(runtime_t(rt)).device(self)();
  }
  globals::devices().remove(dev, call, "device");
  // no attentive poller may hold this device once it is gone
  // (a read-modify-write, not a load: the pollers' increments and this one
  // are totally ordered, so a poller whose increment comes after this one
  // sees the null slot; one that came before is waited for)
  rt->devices.put(dev->index, nullptr);
  while (rt->attentive_pollers.fetch_add(0, std::memory_order_acq_rel) > 0)
    util::cpu_relax();
  drain_device(dev);
  // collective, like the allocation: no peer still talks to this device.
  // Not after a peer failure: the failed rank never comes to the barrier.
  if (!over_network && rt->nfailed.load(std::memory_order_relaxed) == 0) {
    std::lock_guard<std::mutex> guard(rt->collective_mu);
    try {
      // polling on meanwhile: a peer may still wait for a send of ours
      // that the network holds until we poll (progress_during)
      progress_during(dev, [&] {
        via_bootstrap("free_device", [&] { rt->bootstrap->barrier(); });
      });
    } catch (const fatal_error&) {
      // a rank died during the barrier (lcrun --keep-going fails it): free
      // anyway if that is what happened
      if (rt->peer_check_ns) check_peers_now(rt);
      if (rt->nfailed.load(std::memory_order_relaxed) == 0) throw;
    }
  }
  if (dev->runtime->default_device == dev)
    dev->runtime->default_device = nullptr;
  release_endpoints(dev);
  dev->net.reset();  // closes the endpoint: its pending receives are gone
  release_failed_sends(dev);  // their completions can no longer come
  delete dev;
  device->p_impl = nullptr;
}

}  // namespace lci
