// User packets (paper 3.3.1): get_upacket hands the payload area of a
// packet to the user, who fills it and posts it as the buffer of a send or
// active message; the post sends the packet itself (no copy) and the
// library returns it to its pool at completion. put_upacket gives back a
// packet that was not posted.
#include "resource/packet_pool.hpp"
#include "resource/runtime.hpp"
#include "util/error.hpp"

namespace lci
{

void* get_upacket_x::call_impl(runtime_t runtime, packet_pool_t packet_pool)
{
  packet_pool_impl_t* pool = checked_pool(packet_pool, "get_upacket");
  if (!pool) {
    pool = resolve_runtime(runtime, "get_upacket")->default_pool;
    if (!pool)
      util::throw_fatal(
          "get_upacket: no packet pool given and the runtime has none");
  }
  packet_t* p = pool->get();
  if (!p) return nullptr;  // empty: progress, then try again
  p->user_owned.store(true, std::memory_order_relaxed);
  return p->data() + packet_pool_impl_t::kHeaderBytes;
}

void put_upacket_x::call_impl(void* packet, runtime_t)
{
  const char* call = "put_upacket";
  if (!packet) util::throw_fatal(call, ": null packet");
  packet_t* p = packet_pool_impl_t::find_upacket(packet);
  if (!p)
    util::throw_fatal(call, ": ", packet,
                      " is not a packet from get_upacket (not the start of "
                      "a packet's payload in any live packet pool)");
  if (!p->user_owned.exchange(false, std::memory_order_relaxed))
    util::throw_fatal(call, ": packet ", packet,
                      " is not the caller's (posted already, or put back "
                      "twice?)");
  packet_pool_impl_t::put(p);
}

}  // namespace lci
