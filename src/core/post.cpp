// post_comm (paper 3.2.4 and 4.4, steps 1-3): validate, then either insert a
// receive into the matching engine, or send with the inject or eager
// protocol, or hand the message to the rendezvous protocol (rendezvous.cpp)
// or the communication to RMA (rma.cpp).
#include "core/post.hpp"

#include <atomic>
#include <cstring>
#include <memory>
#include <vector>

#include "comp/sync.hpp"
#include "core/control.hpp"
#include "core/peer_failure.hpp"
#include "core/progress.hpp"
#include "core/protocol.hpp"
#include "core/recv.hpp"
#include "core/rendezvous.hpp"
#include "core/rma.hpp"
#include "core/send_comp.hpp"
#include "resource/endpoint.hpp"
#include "resource/matching_engine.hpp"
#include "resource/packet_pool.hpp"
#include "resource/runtime.hpp"
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

status_t done_status(const post_args_t& a)
{
  return done_status(a.rank, a.buffer, a.size, a.tag, a.user_context);
}

namespace
{

// The wire header of an eager send or active message.
inline msg_header_t out_header(runtime_impl_t* rt, tag_t tag, rcomp_t rcomp,
                               matching_policy_t policy,
                               matching_engine_impl_t* me)
{
  msg_header_t hdr;
  hdr.tag = tag;
  hdr.rank = rt->rank_me;
  if (rcomp != RCOMP_NULL)
    hdr.meta = msg_header_t::make_meta(msg_type_t::am, policy, rcomp);
  else
    hdr.meta = msg_header_t::make_meta(msg_type_t::send, policy, me->index);
  return hdr;
}

// Sends an eager message or active message. Either way the user buffer is
// free on return: done, or posted with comp_semantic network (its
// completion waits for the network's).
status_t post_out(const post_args_t& a)
{
  msg_header_t hdr = out_header(a.rt, a.tag, a.rcomp, a.policy, a.me);
  const size_t wire = sizeof(hdr) + a.size;
  const bool network = a.semantic == comp_semantic_t::network;

  if (!network && !a.upacket) {
    error_t e =
        send_small(a.dev, a.pool, a.rank, &hdr, sizeof(hdr), a.buffer, a.size);
    if (e.is_retry()) return status_t(e.errorcode);
    return done_status(a);
  }
  // A user packet within the route's copy limit is copied by the backend
  // and goes back to its pool at once.
  if (!network && wire <= a.dev->net.copy_limit(a.rank)) {
    error_t e = a.dev->net.send_copy(a.rank, &hdr, sizeof(hdr),
                                     a.upacket->data() + sizeof(hdr), a.size);
    if (e.is_retry()) return status_t(e.errorcode);
    a.upacket->user_owned.store(false, std::memory_order_relaxed);
    packet_pool_impl_t::put(a.upacket);
    return done_status(a);
  }
  // A packet, posted: a send with comp_semantic network (the backend's
  // copy would have no network completion), or a user packet sent as it
  // is (it has room for the header in front of its payload).
  packet_t* p = a.upacket ? a.upacket : a.pool->get();
  if (!p) return status_t(errorcode_t::retry_nopacket);
  std::memcpy(p->data(), &hdr, sizeof(hdr));
  if (a.size && !a.upacket)
    std::memcpy(p->data() + sizeof(hdr), a.buffer, a.size);
  // the library owns a user packet before posting it: its completion may
  // recycle it at once (a packet from the backlog is the library's already)
  const bool was_owned = a.upacket && a.upacket->user_owned.exchange(
                                          false, std::memory_order_relaxed);
  error_t e = post_packet(a.dev, a.rank, p, wire, network ? a.comp : nullptr,
                          done_status(a));
  if (e.is_retry()) {
    if (!a.upacket)
      packet_pool_impl_t::put(p);
    else if (was_owned)
      p->user_owned.store(true, std::memory_order_relaxed);
    return status_t(e.errorcode);
  }
  status_t s = done_status(a);
  if (network) s.error = errorcode_t::posted;
  return s;
}

// A receive: take a matching unexpected message if one is waiting (done),
// or leave a descriptor in the matching engine (posted).
// `posted` (optional) receives the descriptor left in the engine.
status_t post_in(const post_args_t& a, comp_impl_t* comp,
                 recv_t** posted = nullptr)
{
  auto key = a.me->key(a.rank, a.tag, a.policy);
  auto* recv =
      new recv_t{a.buffer, a.size, comp, a.user_context, a.mr, a.rank, a.tag};
  void* pkt = a.me->insert(key, recv, matching_engine_impl_t::type_t::recv);
  if (!pkt) {
    // the source failed after the post was checked and before the receive
    // was in the engine, so the failure's sweep may have missed it
    if (peer_is_failed(a.rt, a.rank) &&
        a.me->remove(key, recv, matching_engine_impl_t::type_t::recv)) {
      delete recv;
      throw_peer_failed(a.rt, a.rank, "post_comm");
    }
    if (posted) *posted = recv;
    return status_t(errorcode_t::posted);
  }
  // owned here: complete_recv may throw (message larger than the buffer)
  std::unique_ptr<recv_t> owned(recv);
  return complete_recv(recv, static_cast<packet_t*>(pkt), false);
}

// The completion of a blocking receive. It lives on the heap so that a wait
// interrupted by an exception can leave: if the receive was matched already,
// its signal may still come (from any thread); whichever of signal() and
// abandon() comes second frees the object.
class blocking_comp_t final : public comp_impl_t
{
 public:
  void signal(status_t s) override
  {
    status_ = s;
    if (state_.exchange(kSignalled, std::memory_order_acq_rel) == kAbandoned)
      delete this;
  }
  bool test(status_t* out)
  {
    if (state_.load(std::memory_order_acquire) != kSignalled) return false;
    *out = status_;
    return true;
  }
  void abandon()
  {
    if (state_.exchange(kAbandoned, std::memory_order_acq_rel) == kSignalled)
      delete this;
  }

 private:
  enum : int { kWaiting, kSignalled, kAbandoned };
  std::atomic<int> state_{kWaiting};
  status_t status_;
};

// A receive with COMP_NULL or allow_posted(false): post, then progress until
// it completes. If progress throws meanwhile (another message was bad), the
// receive is withdrawn before the exception leaves, so that no later
// message completes a receive whose call is gone.
status_t post_in_blocking(const post_args_t& a)
{
  auto* comp = new blocking_comp_t;
  recv_t* recv = nullptr;
  status_t s;
  try {
    s = post_in(a, comp, &recv);
  } catch (...) {
    delete comp;
    throw;
  }
  if (!s.is_posted()) {
    delete comp;
    return s;
  }
  try {
    // progress yields the core when idle (util/idle.hpp)
    while (!comp->test(&s)) progress_device(a.dev);
  } catch (...) {
    auto key = a.me->key(a.rank, a.tag, a.policy);
    if (a.me->remove(key, recv, matching_engine_impl_t::type_t::recv)) {
      delete recv;
      delete comp;
    } else {
      comp->abandon();  // matched meanwhile: its completion is underway
    }
    throw;
  }
  delete comp;
  return s;
}

// What a post becomes.
enum class path_t {
  recv,        // a receive: the matching engine
  eager,       // inject or eager send / active message: done at once
  rendezvous,  // send / active message above the eager limit
  rma          // put or get
};

// Posts now, unless operations queued earlier in the device's backlog must
// go first (then retry_backlog: nothing overtakes the backlog).
status_t post_once(const post_args_t& a, path_t path, direction_t dir,
                   comp_impl_t* comp)
{
  if (path == path_t::recv) return post_in(a, comp);
  if (!a.dev->backlog.empty()) return status_t(errorcode_t::retry_backlog);
  switch (path) {
    case path_t::eager:
      return post_out(a);
    case path_t::rendezvous:
      return post_rdv(a, comp);
    default:
      return post_rma(a, dir, comp);
  }
}

// A blocking send, put or get (COMP_NULL, allow_posted(false), or
// COMP_NULL_RETRY above the eager limit): post, then progress until it
// completes. With `may_return_retry`, a refused post returns retry instead.
// The completion object lives on the heap, so that an exception thrown by
// progress (another message was bad) can leave while the operation is
// still in flight. An eager send is done or refused (it never signals)
// unless its completion is awaited from the network (comp_semantic network).
status_t post_blocking(post_args_t a, path_t path, direction_t dir,
                       bool may_return_retry)
{
  const bool signals =
      path != path_t::eager || a.semantic == comp_semantic_t::network;
  blocking_comp_t* comp = signals ? new blocking_comp_t : nullptr;
  a.comp = comp;
  status_t s;
  bool posted = false;
  try {
    for (;;) {
      s = post_once(a, path, dir, comp);
      if (!s.is_retry()) break;
      if (may_return_retry) {
        delete comp;
        return s;
      }
      progress_device(a.dev);
    }
    if (s.is_done()) {
      delete comp;
      return s;
    }
    posted = true;
    while (!comp->test(&s)) progress_device(a.dev);
  } catch (...) {
    if (posted)
      comp->abandon();
    else
      delete comp;
    throw;
  }
  delete comp;
  return s;
}

// The completion of a backlogged copy of a network send: reports the user's
// buffer rather than the copy's, then deletes itself (it fires once).
class origin_buffer_comp_t final : public comp_impl_t
{
 public:
  origin_buffer_comp_t(comp_impl_t* comp, void* buffer)
      : comp_(comp), buffer_(buffer)
  {
  }
  void signal(status_t s) override
  {
    s.buffer = buffer_;
    comp_impl_t* comp = comp_;
    delete this;
    comp->signal(s);
  }

 private:
  comp_impl_t* comp_;
  void* buffer_;
};

// allow_retry(false) and the post would retry: queue it in the device's
// backlog, which progress posts in order. An eager message is copied (a
// user packet is queued itself), so the user's buffer is free at once:
// done_backlog, or posted_backlog with allow_done(false), and then the
// completion object is signalled when the message has left; with
// comp_semantic network it is always posted_backlog, signalled at the
// send's network completion. A rendezvous, put or get keeps using the
// user's buffer: posted_backlog, signalled when it completes.
status_t post_backlog(const post_args_t& a, path_t path, direction_t dir,
                      comp_impl_t* comp, bool signal)
{
  status_t result = done_status(a);
  if (path == path_t::eager) {
    post_args_t queued = a;
    std::shared_ptr<std::vector<char>> data;
    if (a.upacket) {
      // a user packet is queued itself: from here on it is the library's
      a.upacket->user_owned.store(false, std::memory_order_relaxed);
    } else {
      data = std::make_shared<std::vector<char>>(
          static_cast<char*>(a.buffer), static_cast<char*>(a.buffer) + a.size);
      queued.buffer = data->data();
    }
    if (a.semantic == comp_semantic_t::network) {
      signal = false;
      if (!a.upacket) queued.comp = new origin_buffer_comp_t(comp, a.buffer);
    }
    a.dev->backlog.push([queued, data, comp, signal, result]() -> error_t {
      if (peer_is_failed(queued.rt, queued.rank)) {
        // never sent: a user packet goes back to its pool; whoever waits
        // for a signal gets the failure
        if (queued.upacket) packet_pool_impl_t::put(queued.upacket);
        status_t f = peer_failure_status(queued.rank, result.buffer, result.tag,
                                         result.user_context);
        if (queued.semantic == comp_semantic_t::network && queued.comp)
          queued.comp->signal(f);
        else if (signal)
          comp->signal(f);
        return errorcode_t::done;
      }
      status_t s = post_out(queued);
      if (s.is_retry()) return s.error;
      if (signal) {
        status_t done = result;
        done.error = errorcode_t::done;
        comp->signal(done);
      }
      return errorcode_t::done;
    });
    result.error = signal || a.semantic == comp_semantic_t::network
                       ? errorcode_t::posted_backlog
                       : errorcode_t::done_backlog;
  } else {
    a.dev->backlog.push([a, path, dir, comp, result]() -> error_t {
      if (peer_is_failed(a.rt, a.rank)) {
        comp->signal(peer_failure_status(a.rank, result.buffer, result.tag,
                                         result.user_context));
        return errorcode_t::done;
      }
      status_t s;
      try {
        s = path == path_t::rendezvous ? post_rdv(a, comp)
                                       : post_rma(a, dir, comp);
      } catch (const peer_failure_error&) {
        // the target failed between the check above and the post: the
        // post took nothing, and its completion must still say so
        comp->signal(peer_failure_status(a.rank, result.buffer, result.tag,
                                         result.user_context));
        return errorcode_t::done;
      }
      if (s.is_retry()) return s.error;
      if (s.is_done()) comp->signal(result);  // nothing to move
      return errorcode_t::done;
    });
    result.error = errorcode_t::posted_backlog;
  }
  return result;
}

// The user packet (get_upacket) that is the buffer of a send, if any: a
// packet of the post's pool, the device's pool or the runtime's default pool
// whose payload starts at the buffer. A packet the caller does not own
// (posted already, or put back) is an error.
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

size_t eager_limit(packet_pool_impl_t* send_pool, device_impl_t* dev)
{
  size_t packet = send_pool->attr.packet_size;
  if (dev->pool->attr.packet_size < packet)
    packet = dev->pool->attr.packet_size;
  return packet - sizeof(msg_header_t);
}

// Wildcards on a receive select the matching policy that ignores them.
matching_policy_t effective_policy(matching_policy_t policy, int rank,
                                   tag_t tag)
{
  bool use_rank =
      rank != ANY_SOURCE && (policy == matching_policy_t::rank_tag ||
                             policy == matching_policy_t::rank_only);
  bool use_tag = tag != ANY_TAG && (policy == matching_policy_t::rank_tag ||
                                    policy == matching_policy_t::tag_only);
  if (use_rank && use_tag) return matching_policy_t::rank_tag;
  if (use_rank) return matching_policy_t::rank_only;
  if (use_tag) return matching_policy_t::tag_only;
  return matching_policy_t::none;
}

// The argument checks every post makes that a common post passes: rank in
// range, no failed peer (the cheap stand-in for "this rank is not failed"),
// a buffer unless empty, a sane size, a tag within max_tag. One
// conjunction without a message; when it fails, check_args says which
// (and lets the receive's wildcards through). call_lean's fast paths and
// post_checked both start here, so the two entries cannot drift apart.
[[gnu::always_inline]] inline bool args_pass(const runtime_impl_t* rt, int rank,
                                             const void* buffer, size_t size,
                                             tag_t tag)
{
  return rank >= 0 && rank < rt->rank_n &&
         rt->nfailed.load(std::memory_order_relaxed) == 0 &&
         (buffer || size == 0) && static_cast<int64_t>(size) >= 0 &&
         tag <= rt->attr.max_tag;
}

// args_pass failed: the same checks one by one, each with its message (a
// receive may name ANY_SOURCE and ANY_TAG; `wild`).
[[gnu::noinline]] void check_args(const runtime_impl_t* rt, int rank,
                                  const void* buffer, size_t size, tag_t tag,
                                  bool wild, const char* call)
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

// The checks every post makes, in one order, then the path and the post.
// `a` holds the resolved handles and the arguments. kLean: the caller is
// call_lean, so packet_pool, matching_engine and mr are empty, rmr is
// empty, the matching policy is rank_tag, allow_done/posted/retry are true
// and comp_semantic is memory: the checks of those fold away, and the rest
// runs exactly as for call_impl (same checks, same order, same messages).
template <bool kLean>
[[gnu::always_inline]] inline status_t post_checked(
    post_args_t& a, direction_t direction, comp_t local_comp, bool allow_done,
    bool allow_posted, bool allow_retry)
{
  const char* call = "post_comm";
  const int rank = a.rank;
  const size_t size = a.size;
  const tag_t tag = a.tag;
  const rcomp_t remote_comp = a.rcomp;
  const bool in = direction == direction_t::IN;
  const bool rma = !kLean && !a.rmr.is_empty();
  if (in && !rma && remote_comp != RCOMP_NULL)
    util::throw_fatal(call, ": a receive (direction IN) with remote_comp ",
                      remote_comp,
                      " is not a valid communication (paper Table 1)");
  if (__builtin_expect(!args_pass(a.rt, rank, a.buffer, size, tag), 0))
    check_args(a.rt, rank, a.buffer, size, tag, in && !rma, call);
  if (remote_comp != RCOMP_NULL && remote_comp > msg_header_t::kAuxMax)
    util::throw_fatal(call, ": remote_comp ", remote_comp, " is out of range");
  if (!a.me && !rma && remote_comp == RCOMP_NULL)
    util::throw_fatal(call,
                      ": no matching engine given and the runtime has "
                      "none");
  if (in && local_comp == COMP_NULL_RETRY && !rma)
    util::throw_fatal(call,
                      ": a receive needs a completion object "
                      "(COMP_NULL_RETRY cannot be signalled)");
  const comp_semantic_t comp_semantic = a.semantic;
  if (!kLean && comp_semantic != comp_semantic_t::memory &&
      comp_semantic != comp_semantic_t::network)
    util::throw_fatal(call, ": comp_semantic ", static_cast<int>(comp_semantic),
                      " is neither memory (0) nor network (1)");
  // COMP_NULL_RETRY signals nothing, so when the network completes cannot
  // be observed: network is memory then (done when the buffer is free, as
  // upstream LCI 2's benchmarks expect of a put with signal)
  if (!kLean && !in && comp_semantic == comp_semantic_t::network &&
      local_comp == COMP_NULL_RETRY)
    a.semantic = comp_semantic_t::memory;
  if (!in && !rma && a.buffer) {
    a.upacket = find_user_packet(a, call);
    if (a.upacket) a.pool = a.upacket->pool;  // its size bounds the message
  }
  path_t path;
  if (rma) {
    if (!a.rt->net_context->caps().rma)
      util::throw_fatal(call, ": the network backend (",
                        a.rt->net_context->caps().provider, ") has no RMA");
    check_rmr(a.rt, in ? "post_comm (get)" : "post_comm (put)", rank, a.rmr,
              a.remote_disp, size);
    path = path_t::rma;
  } else if (in) {
    a.policy = effective_policy(a.policy, rank, tag);
    path = path_t::recv;
  } else if (size > eager_limit(a.pool, a.dev)) {
    if (a.upacket)
      util::throw_fatal(call, ": size ", size,
                        " exceeds the payload of the user packet (",
                        eager_limit(a.pool, a.dev), " bytes)");
    if (!a.rt->net_context->caps().rma)
      util::throw_fatal(call, ": size ", size, " exceeds the eager limit of ",
                        eager_limit(a.pool, a.dev),
                        " bytes and the network backend (",
                        a.rt->net_context->caps().provider,
                        ") has no RMA for the rendezvous protocol");
    path = path_t::rendezvous;
  } else {
    path = path_t::eager;
  }
  const bool long_op = path == path_t::rendezvous || path == path_t::rma;

  // COMP_NULL or allow_posted(false): block, driving progress, until done.
  // COMP_NULL_RETRY promises done or retry: a rendezvous, put or get, which
  // cannot be done at once, blocks too (but may return retry).
  if (local_comp.is_empty() || !allow_posted ||
      (long_op && local_comp == COMP_NULL_RETRY)) {
    if (path == path_t::recv) return post_in_blocking(a);
    return post_blocking(
        a, path, direction,
        long_op && local_comp == COMP_NULL_RETRY && allow_retry);
  }

  comp_impl_t* comp = local_comp.p_impl;
  status_t s = post_once(a, path, direction, comp);
  if (s.is_retry() && !allow_retry)  // receives never retry
    return post_backlog(a, path, direction, comp,
                        !allow_done && local_comp != COMP_NULL_RETRY);
  if (s.is_done() && !allow_done && local_comp != COMP_NULL_RETRY) {
    comp->signal(s);
    s.error = errorcode_t::posted;
  }
  return s;
}

// The arguments of a lean post (every other optional argument at its
// default).
inline void lean_args(post_args_t* a, const rt_dev_t& rd, int rank,
                      void* local_buffer, size_t size, comp_t local_comp,
                      tag_t tag, rcomp_t remote_comp, void* user_context)
{
  a->rt = rd.rt;
  a->dev = rd.dev;
  a->pool = rd.dev->pool;
  a->me = rd.rt->default_me;
  a->rank = rank;
  a->buffer = local_buffer;
  a->size = size;
  a->tag = tag;
  a->rcomp = remote_comp;
  a->user_context = user_context;
  a->policy = matching_policy_t::rank_tag;
  a->semantic = comp_semantic_t::memory;
  a->comp = local_comp.p_impl;
  a->upacket = nullptr;
  a->mr = mr_t();
  a->remote_disp = 0;
  // (a->rmr: empty, from its constructor)
}

// A lean post that is not one of call_lean's two common cases: every check.
[[gnu::noinline]] status_t post_lean_checked(post_args_t& a,
                                             direction_t direction,
                                             comp_t local_comp)
{
  return post_checked<true>(a, direction, local_comp, true, true, true);
}

}  // namespace

size_t eager_payload_limit(packet_pool_impl_t* send_pool, device_impl_t* dev)
{
  return eager_limit(send_pool, dev);
}

status_t post_comm_x::call_impl(
    direction_t direction, int rank, void* local_buffer, size_t size,
    comp_t local_comp, runtime_t runtime, device_t device,
    packet_pool_t packet_pool, matching_engine_t matching_engine, mr_t mr,
    uint64_t remote_disp, rmr_t rmr, tag_t tag, rcomp_t remote_comp,
    void* user_context, matching_policy_t matching_policy, bool allow_done,
    bool allow_posted, bool allow_retry, comp_semantic_t comp_semantic,
    endpoint_t endpoint)
{
  const char* call = "post_comm";
  post_args_t a;
  // every handle given is checked live (and of this runtime) before use
  rt_dev_t rd =
      resolve_device(runtime, endpoint_device(endpoint, device, call), call);
  a.rt = rd.rt;
  a.dev = rd.dev;
  a.pool = packet_pool.p_impl ? checked_pool(packet_pool, call) : a.dev->pool;
  a.me = matching_engine.p_impl ? checked_engine(matching_engine, a.rt, call)
                                : a.rt->default_me;
  checked_mr(mr, a.rt, call);
  a.rank = rank;
  a.buffer = local_buffer;
  a.size = size;
  a.tag = tag;
  a.rcomp = remote_comp;
  a.user_context = user_context;
  a.policy = matching_policy;
  a.semantic = comp_semantic;
  a.comp = local_comp.p_impl;
  a.upacket = nullptr;
  a.mr = mr;
  a.remote_disp = remote_disp;
  a.rmr = rmr;
  return post_checked<false>(a, direction, local_comp, allow_done, allow_posted,
                             allow_retry);
}

// post_comm with every optional argument but these at its default (the
// generated call() decides): the same post as call_impl's. The two common
// posts whose every check passes, an eager send or active message (not
// from a user packet) and a receive from a given rank with a given tag, go
// straight to send_small and post_in: args_pass, post_checked's own first
// test, and the few checks of post_checked that could fail for these two
// cases (remote_comp, matching engine), so nothing is skipped that could
// fail; everything else, and every error, goes through post_checked.
status_t post_comm_x::call_lean(direction_t direction, int rank,
                                void* local_buffer, size_t size,
                                comp_t local_comp, device_t device, tag_t tag,
                                rcomp_t remote_comp, void* user_context)
{
  rt_dev_t rd = resolve_device(runtime_t(), device, "post_comm");
  runtime_impl_t* rt = rd.rt;
  device_impl_t* dev = rd.dev;
  // the post neither blocks nor may retry (post_checked's other checks
  // that could fail for these two cases are spelled out below)
  const bool common = args_pass(rt, rank, local_buffer, size, tag) &&
                      local_comp.p_impl != nullptr &&
                      local_comp != COMP_NULL_RETRY;
  if (direction == direction_t::OUT) {
    matching_engine_impl_t* me = rt->default_me;
    if (__builtin_expect(
            common && size <= eager_limit(dev->pool, dev) &&
                (remote_comp == RCOMP_NULL
                     ? me != nullptr
                     : remote_comp <= msg_header_t::kAuxMax) &&
                !(local_buffer &&
                  (dev->pool->upacket_of(local_buffer) ||
                   (rt->default_pool && rt->default_pool != dev->pool &&
                    rt->default_pool->upacket_of(local_buffer)))) &&
                dev->backlog.empty(),
            1)) {
      // post_out's common case, without its arguments in memory
      const msg_header_t hdr =
          out_header(rt, tag, remote_comp, matching_policy_t::rank_tag, me);
      error_t e = send_small(dev, dev->pool, rank, &hdr, sizeof(hdr),
                             local_buffer, size);
      if (e.is_retry()) return status_t(e.errorcode);
      return done_status(rank, local_buffer, size, tag, user_context);
    }
  }
  post_args_t a;
  lean_args(&a, rd, rank, local_buffer, size, local_comp, tag, remote_comp,
            user_context);
  if (direction == direction_t::IN &&
      __builtin_expect(common && remote_comp == RCOMP_NULL && tag != ANY_TAG &&
                           a.me != nullptr,
                       1))
    return post_in(a, local_comp.p_impl);
  return post_lean_checked(a, direction, local_comp);
}

}  // namespace lci
