#include "resource/packet_pool.hpp"

#include "core/protocol.hpp"
#include "util/error.hpp"

namespace lci
{

packet_pool_impl_t::packet_pool_impl_t(const packet_pool_attr_t& a) : attr(a)
{
  if (attr.packet_size <= sizeof(msg_header_t) || attr.packet_size % 8 != 0)
    util::throw_fatal("alloc_packet_pool: packet_size ", attr.packet_size,
                      " must be a multiple of 8 larger than the ",
                      sizeof(msg_header_t), "-byte message header");
  if (attr.npackets == 0)
    util::throw_fatal("alloc_packet_pool: npackets must be positive");
  size_t stride = sizeof(packet_t) + attr.packet_size;
  stride = (stride + 63) / 64 * 64;
  stride_ = stride;
  slab_ = static_cast<char*>(std::aligned_alloc(64, stride * attr.npackets));
  if (!slab_)
    util::throw_fatal("alloc_packet_pool: cannot allocate ", attr.npackets,
                      " packets of ", attr.packet_size, " bytes");
  free_.reserve(attr.npackets);
  for (size_t i = 0; i < attr.npackets; ++i) {
    auto* p = new (slab_ + i * stride) packet_t;
    p->pool = this;
    p->recv_owner = nullptr;
    free_.push_back(p);
  }
}

packet_pool_impl_t::~packet_pool_impl_t() { std::free(slab_); }

void packet_pool_impl_t::reclaim_recvs(const void* owner)
{
  for (size_t i = 0; i < attr.npackets; ++i) {
    auto* p = reinterpret_cast<packet_t*>(slab_ + i * stride_);
    if (p->recv_owner != owner) continue;
    p->recv_owner = nullptr;
    put(p);
  }
}

}  // namespace lci

#include "core/globals.hpp"
#include "resource/runtime.hpp"

namespace lci
{

packet_pool_t alloc_packet_pool_x::call_impl(runtime_t runtime,
                                             const packet_pool_attr_t& attr)
{
  resolve_runtime(runtime, "alloc_packet_pool");
  auto* pool = new packet_pool_impl_t(attr);
  globals::packet_pools().add(pool);
  return packet_pool_t(pool);
}

void free_packet_pool_x::call_impl(packet_pool_t* packet_pool, runtime_t)
{
  const char* call = "free_packet_pool";
  if (!packet_pool) util::throw_fatal(call, ": null packet pool pointer");
  packet_pool_impl_t* pool = util::checked(packet_pool->p_impl, call);
  globals::packet_pools().check(pool, call, "packet pool");
  if (pool->users.load() > 0)
    util::throw_fatal(call, ": packet pool ", static_cast<void*>(pool),
                      " still supplies ", pool->users.load(),
                      " device(s); free them first");
  globals::packet_pools().remove(pool, call, "packet pool");
  delete pool;
  packet_pool->p_impl = nullptr;
}

packet_pool_t get_default_packet_pool_x::call_impl(runtime_t runtime)
{
  return packet_pool_t(
      resolve_runtime(runtime, "get_default_packet_pool")->default_pool);
}

size_t get_max_bcopy_size_x::call_impl(runtime_t runtime,
                                       packet_pool_t packet_pool)
{
  packet_pool_impl_t* pool = packet_pool.p_impl;
  if (!pool)
    pool = resolve_runtime(runtime, "get_max_bcopy_size")->default_pool;
  util::checked(pool, "get_max_bcopy_size");
  return pool->attr.packet_size - sizeof(msg_header_t);
}

}  // namespace lci
