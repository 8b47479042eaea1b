#include "resource/device.hpp"

#include <algorithm>
#include <atomic>

#include "resource/packet_pool.hpp"
#include "resource/runtime.hpp"
#include "util/error.hpp"

namespace lci
{

device_impl_t::device_impl_t(runtime_impl_t* rt, packet_pool_impl_t* p,
                             const device_attr_t& a)
    : attr(a), runtime(rt), pool(p)
{
  static std::atomic<int> next_uid{0};
  attr.uid = next_uid.fetch_add(1, std::memory_order_relaxed);
  attentive = rt->attr.attentive_progress;
  am_gate.limit = rt->attr.max_am_rdv_bytes;
  if (rt->attr.idle_spins != 0)
    yield_after = static_cast<uint32_t>(
        std::min<size_t>(rt->attr.idle_spins, UINT32_MAX));
  pending_sends.prev = pending_sends.next = &pending_sends;
  failed_sends.prev = failed_sends.next = &failed_sends;
  // net_max_recvs 0: a raw device (net_post_recv receives)
  if (attr.net_max_sends == 0 || attr.net_max_cqes == 0)
    util::throw_fatal("alloc_device: net_max_sends (", attr.net_max_sends,
                      ") and net_max_cqes (", attr.net_max_cqes,
                      ") must be positive");
  // pre-posted receives never hold more than half of the pool: the rest is
  // for sends (attr reports the value in force)
  if (attr.net_max_recvs > 0 && attr.net_max_recvs > pool->attr.npackets / 2)
    attr.net_max_recvs =
        pool->attr.npackets / 2 > 0 ? pool->attr.npackets / 2 : 1;
  pool->users.fetch_add(1);
  registered_pools.push_back(pool->id());
}

device_impl_t::~device_impl_t()
{
  // (free_device closed the endpoint and released the failed sends first;
  // this is the whole teardown of an allocation that failed)
  net.reset();  // closes the endpoint: its pending receives are gone
  pool->reclaim_recvs(this);
  pool->users.fetch_sub(1);
}

device_t get_default_device_x::call_impl(runtime_t runtime)
{
  return device_t(
      resolve_runtime(runtime, "get_default_device")->default_device);
}

}  // namespace lci
