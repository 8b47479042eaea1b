// The parts of post_comm that its files share: post.cpp (the checks, the
// eager and receive paths, the two entries), post_blocking.cpp (posts
// that wait for their completion), post_backlog.cpp (posts queued behind
// the device's backlog), post_checks.cpp (the argument errors, user
// packets). The checks a post passes on its fast path are inline here, so
// that both entries (call_impl and call_lean) share them without a call.
#ifndef LCI_CORE_POST_INTERNAL_HPP
#define LCI_CORE_POST_INTERNAL_HPP

#include <atomic>
#include <cstddef>

#include "core/post.hpp"
#include "core/protocol.hpp"
#include "core/recv.hpp"
#include "lci.hpp"
#include "resource/device.hpp"
#include "resource/matching_engine.hpp"
#include "resource/packet_pool.hpp"
#include "resource/runtime.hpp"

namespace lci
{

// What a post becomes.
enum class post_path_t {
  recv,        // a receive: the matching engine
  eager,       // inject or eager send / active message: done at once
  rendezvous,  // send / active message above the eager limit
  rma          // put or get
};

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
status_t post_out(const post_args_t& a);

// A receive: take a matching unexpected message if one is waiting (done),
// or leave a descriptor in the matching engine (posted).
// `posted` (optional) receives the descriptor left in the engine.
status_t post_in(const post_args_t& a, comp_impl_t* comp,
                 recv_t** posted = nullptr);

// Posts now, unless operations queued earlier in the device's backlog must
// go first (then retry_backlog: nothing overtakes the backlog).
status_t post_once(const post_args_t& a, post_path_t path, direction_t dir,
                   comp_impl_t* comp);

// (post_blocking.cpp)
// A receive with COMP_NULL or allow_posted(false): post, then progress until
// it completes. If progress throws meanwhile (another message was bad), the
// receive is withdrawn before the exception leaves, so that no later
// message completes a receive whose call is gone.
status_t post_in_blocking(const post_args_t& a);

// A blocking send, put or get (COMP_NULL, allow_posted(false), or
// COMP_NULL_RETRY above the eager limit): post, then progress until it
// completes. With `may_return_retry`, a refused post returns retry instead.
// The completion object lives on the heap, so that an exception thrown by
// progress (another message was bad) can leave while the operation is
// still in flight. An eager send is done or refused (it never signals)
// unless its completion is awaited from the network (comp_semantic network).
status_t post_blocking(post_args_t a, post_path_t path, direction_t dir,
                       bool may_return_retry);

// (post_backlog.cpp)
// allow_retry(false) and the post would retry: queue it in the device's
// backlog, which progress posts in order. An eager message is copied (a
// user packet is queued itself), so the user's buffer is free at once:
// done_backlog, or posted_backlog with allow_done(false), and then the
// completion object is signalled when the message has left; with
// comp_semantic network it is always posted_backlog, signalled at the
// send's network completion. A rendezvous, put or get keeps using the
// user's buffer: posted_backlog, signalled when it completes.
status_t post_backlog(const post_args_t& a, post_path_t path, direction_t dir,
                      comp_impl_t* comp, bool signal);

// (post_checks.cpp)
// The user packet (get_upacket) that is the buffer of a send, if any: a
// packet of the post's pool, the device's pool or the runtime's default pool
// whose payload starts at the buffer. A packet the caller does not own
// (posted already, or put back) is an error.
packet_t* find_user_packet(const post_args_t& a, const char* call);

// args_pass failed: the same checks one by one, each with its message (a
// receive may name ANY_SOURCE and ANY_TAG; `wild`).
void check_args(const runtime_impl_t* rt, int rank, const void* buffer,
                size_t size, tag_t tag, bool wild, const char* call);

// The largest eager payload from `send_pool` on `dev`.
inline size_t eager_limit(packet_pool_impl_t* send_pool, device_impl_t* dev)
{
  size_t packet = send_pool->attr.packet_size;
  if (dev->pool->attr.packet_size < packet)
    packet = dev->pool->attr.packet_size;
  return packet - sizeof(msg_header_t);
}

// Whether a post of `size` bytes to `rank` above the packet-bound eager
// limit still goes eagerly: a route that carries larger messages without a
// packet (net::link_t::eager_limit), for a post that needs none (not from
// a user packet, comp_semantic memory).
inline bool eager_by_route(device_impl_t* dev, int rank, size_t size)
{
  return size + sizeof(msg_header_t) <= dev->net.eager_limit(rank);
}

// Wildcards on a receive select the matching policy that ignores them.
inline matching_policy_t effective_policy(matching_policy_t policy, int rank,
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

}  // namespace lci

#endif  // LCI_CORE_POST_INTERNAL_HPP
