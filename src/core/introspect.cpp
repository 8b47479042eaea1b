#include "core/introspect.hpp"

#include <cstring>
#include <memory>

#include "core/progress.hpp"
#include "resource/device.hpp"
#include "resource/matching_engine.hpp"
#include "resource/packet_pool.hpp"
#include "resource/runtime.hpp"

namespace lci::introspect
{

counts_t get_counts(runtime_t runtime, device_t device, packet_pool_t pool,
                    matching_engine_t engine)
{
  runtime_impl_t* rt = resolve_runtime(runtime, "introspect::get_counts");
  device_impl_t* dev =
      device.is_empty() ? rt->default_device : device.get_impl();
  packet_pool_impl_t* pp =
      pool.is_empty() ? (dev ? dev->pool : rt->default_pool) : pool.get_impl();
  matching_engine_impl_t* me =
      engine.is_empty() ? rt->default_me : engine.get_impl();
  counts_t c;
  if (pp) {
    c.pool_npackets = pp->attr.npackets;
    c.pool_free = pp->count_free();
  }
  if (dev) {
    c.recvs_posted = dev->nrecvs_posted.load();
    c.sends_pending = dev->nsends_pending.load();
    c.ops_pending = dev->nops_pending.load();
    c.backlog = dev->backlog.size();
    c.held_released = dev->held_released.load();
  }
  if (me) c.me_entries = me->count_entries();
  c.user_mrs = rt->mrs.count();
  c.net_registrations = rt->net_context->count_registered();
  c.rdv_ctxs = rt->rdv_ctxs.count_live();
  c.rdv_split_read = rt->rdv_split_read.load();
  c.rdv_split_written = rt->rdv_split_written.load();
  c.rdv_get_read = rt->rdv_get_read.load();
  return c;
}

bool deliver_raw(const void* data, size_t len, runtime_t runtime,
                 device_t device, bool in_place)
{
  runtime_impl_t* rt = resolve_runtime(runtime, "introspect::deliver_raw");
  device_impl_t* dev =
      device.is_empty() ? rt->default_device : device.get_impl();
  if (!dev) return false;
  if (len > dev->pool->attr.packet_size) return false;
  if (in_place) {
    // a heap scratch buffer of exactly the message's size (1 byte for an
    // empty one), so that a read past it is an AddressSanitizer error
    std::unique_ptr<char[]> copy(new char[len > 0 ? len : 1]);
    if (len > 0) std::memcpy(copy.get(), data, len);
    deliver_in_place(dev, copy.get(), len);
    return true;
  }
  packet_t* pkt = dev->pool->get();
  if (!pkt) return false;
  if (len > 0) std::memcpy(pkt->data(), data, len);
  pkt->recv_owner = dev;
  // as if pre-posted: deliver_message counts the receive as consumed
  dev->nrecvs_posted.fetch_add(1, std::memory_order_relaxed);
  deliver_message(dev, pkt, len);
  return true;
}

std::string net_state(runtime_t runtime, device_t device)
{
  runtime_impl_t* rt = resolve_runtime(runtime, "introspect::net_state");
  device_impl_t* dev =
      device.is_empty() ? rt->default_device : device.get_impl();
  return dev ? dev->net.debug_state() : std::string();
}

}  // namespace lci::introspect
