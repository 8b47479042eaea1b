// A posted receive (recv.hpp): its allocation from a per-thread cache and
// its completion with an eager message or an RTS.
#include "core/recv.hpp"

#include <cstring>
#include <memory>

#include "core/rendezvous.hpp"
#include "util/copy.hpp"
#include "util/error.hpp"

namespace lci
{

namespace
{
// Freed receive descriptors of this thread, reused by its next posts (a
// receive posted by one thread and completed by another moves between the
// caches, each bounded: beyond it, the global allocator). Plain data, so
// that a thread reaches it at a fixed offset from the thread pointer with
// no initialization guard (a thread_local with a destructor has one, and
// its guard is reached through __tls_get_addr on every post);
// the destructor lives in recv_cache_reaper_t, made by the first free.
struct recv_cache_t {
  static constexpr int kMax = 64;
  void* items[kMax];
  int n;
  bool reaper;  // this thread's recv_cache_reaper_t exists
  bool dead;    // destroyed (thread exit): straight to the allocator
};
// initial-exec: a fixed offset from the thread pointer, no __tls_get_addr
// (see resource/packet_pool.cpp)
#if defined(__GNUC__) && !defined(__APPLE__)
thread_local recv_cache_t g_recv_cache
    __attribute__((tls_model("initial-exec")));
#else
thread_local recv_cache_t g_recv_cache;
#endif
struct recv_cache_reaper_t {
  ~recv_cache_reaper_t()
  {
    recv_cache_t& c = g_recv_cache;
    c.dead = true;
    while (c.n > 0) ::operator delete(c.items[--c.n]);
  }
};
[[gnu::noinline]] void make_recv_cache_reaper()
{
  thread_local recv_cache_reaper_t reaper;
  (void)&reaper;
  g_recv_cache.reaper = true;
}
}  // namespace

void* recv_t::operator new(size_t size)
{
  recv_cache_t& c = g_recv_cache;
  if (c.n > 0 && size == sizeof(recv_t)) return c.items[--c.n];
  return ::operator new(size);
}

void recv_t::operator delete(void* p)
{
  recv_cache_t& c = g_recv_cache;
  if (__builtin_expect(!c.reaper, 0) && !c.dead) make_recv_cache_reaper();
  if (c.n < recv_cache_t::kMax && !c.dead)
    c.items[c.n++] = p;
  else
    ::operator delete(p);
}

status_t complete_recv_eager(recv_t* recv, const msg_header_t& hdr,
                             const void* payload, size_t size, packet_t* pkt,
                             bool signal)
{
  if (size > recv->size) {
    if (pkt) packet_pool_impl_t::put(pkt);
    size_t capacity = recv->size;
    if (signal) delete recv;
    util::throw_fatal("post_recv: a ", size, "-byte message from rank ",
                      hdr.rank, " with tag ", hdr.tag,
                      " does not fit the posted ", capacity,
                      "-byte receive buffer");
  }
  util::copy_bytes(recv->buffer, payload, size);
  if (pkt) packet_pool_impl_t::put(pkt);
  status_t s(errorcode_t::done);
  s.rank = hdr.rank;
  s.buffer = recv->buffer;
  s.size = size;
  s.tag = hdr.tag;
  s.user_context = recv->user_context;
  if (signal) {
    comp_impl_t* comp = recv->comp;
    delete recv;
    comp->signal(s);
  }
  return s;
}

status_t complete_recv(recv_t* recv, packet_t* pkt, bool signal)
{
  msg_header_t hdr;
  std::memcpy(&hdr, pkt->data(), sizeof(hdr));
  if (hdr.type() == msg_type_t::rts_send) {
    std::unique_ptr<recv_t> owned(signal ? recv : nullptr);
    return start_rdv_recv(recv, pkt);
  }
  return complete_recv_eager(recv, hdr, pkt->data() + sizeof(hdr), pkt->length,
                             pkt, signal);
}

}  // namespace lci
