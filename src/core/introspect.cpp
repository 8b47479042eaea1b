#include "core/introspect.hpp"

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
  }
  if (me) c.me_entries = me->count_entries();
  c.user_mrs = rt->mrs.count();
  c.net_registrations = rt->net_context->count_registered();
  c.rdv_ctxs = rt->rdv_ctxs.count_live();
  return c;
}

}  // namespace lci::introspect
