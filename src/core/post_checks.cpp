// The error paths of post_comm's argument checks, and the lookup of the
// user packet (get_upacket) a send's buffer may be.
#include <cstdint>

#include "core/peer_failure.hpp"
#include "core/post_internal.hpp"
#include "util/error.hpp"

namespace lci
{

packet_t* find_user_packet(const post_args_t& a, const char* call)
{
  packet_pool_impl_t* pools[] = {a.pool, a.dev->pool, a.rt->default_pool};
  for (int i = 0; i < 3; ++i) {
    packet_pool_impl_t* pool = pools[i];
    // (usually one pool three times: asked once)
    if (!pool || (i > 0 && pool == pools[0]) || (i > 1 && pool == pools[1]))
      continue;
    packet_t* p = pool->upacket_of(a.buffer);
    if (!p) continue;
    if (!p->user_owned.load(std::memory_order_relaxed))
      util::throw_fatal(call, ": buffer ", a.buffer,
                        " is a packet that is not the caller's (posted "
                        "already, or given back with put_upacket?)");
    return p;
  }
  return nullptr;
}

void check_args(const runtime_impl_t* rt, int rank, const void* buffer,
                size_t size, tag_t tag, bool wild, const char* call)
{
  if (!(rank >= 0 && rank < rt->rank_n) && !(wild && rank == ANY_SOURCE))
    util::throw_fatal(call, ": rank ", rank, " is out of range [0, ",
                      rt->rank_n, ")");
  if (peer_is_failed(rt, rank))
    throw_peer_failed(const_cast<runtime_impl_t*>(rt), rank, call);
  if (!buffer && size > 0)
    util::throw_fatal(call, ": null buffer with size ", size);
  if (static_cast<int64_t>(size) < 0)
    util::throw_fatal(call, ": size ", size,
                      " is negative (or larger than any buffer)");
  if (tag > rt->attr.max_tag && !(wild && tag == ANY_TAG))
    util::throw_fatal(call, ": tag ", tag, " is above max_tag ",
                      rt->attr.max_tag);
}

}  // namespace lci
