// post_comm (paper 3.2.4 and 4.4, steps 1-3): validate, then either insert a
// receive into the matching engine, or send with the inject or eager
// protocol, or hand the message to the rendezvous protocol (rendezvous.cpp)
// or the communication to RMA (rma.cpp). Posts that block, and posts
// queued behind the backlog, are in post_blocking.cpp and post_backlog.cpp;
// the shared pieces in post_internal.hpp.
#include <cstring>
#include <memory>

#include "comp/sync.hpp"
#include "core/control.hpp"
#include "core/peer_failure.hpp"
#include "core/post_internal.hpp"
#include "core/post_list.hpp"
#include "core/rendezvous.hpp"
#include "core/rma.hpp"
#include "core/send_comp.hpp"
#include "resource/endpoint.hpp"
#include "util/copy.hpp"
#include "util/error.hpp"

namespace lci
{

status_t done_status(const post_args_t& a)
{
  return done_status(a.rank, a.buffer, a.size, a.tag, a.user_context);
}

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
    util::copy_bytes(p->data() + sizeof(hdr), a.buffer, a.size);
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

namespace
{

// post_in with its arguments one by one: call_lean's common receive takes
// them from its registers, without a post_args_t in memory.
[[gnu::always_inline]] inline status_t post_in_impl(
    runtime_impl_t* rt, matching_engine_impl_t* me, int rank, void* buffer,
    size_t size, tag_t tag, matching_policy_t policy, mr_t mr,
    comp_impl_t* comp, void* user_context, recv_t** posted)
{
  auto key = me->key(rank, tag, policy);
  auto* recv = new recv_t{buffer, size, comp, user_context, mr, rank, tag};
  void* pkt = me->insert(key, recv, matching_engine_impl_t::type_t::recv);
  if (!pkt) {
    // the source failed after the post was checked and before the receive
    // was in the engine, so the failure's sweep may have missed it
    if (peer_is_failed(rt, rank) &&
        me->remove(key, recv, matching_engine_impl_t::type_t::recv)) {
      delete recv;
      throw_peer_failed(rt, rank, "post_comm");
    }
    if (posted) *posted = recv;
    return status_t(errorcode_t::posted);
  }
  // owned here: complete_recv may throw (message larger than the buffer)
  std::unique_ptr<recv_t> owned(recv);
  return complete_recv(recv, static_cast<packet_t*>(pkt), false);
}

}  // namespace

status_t post_in(const post_args_t& a, comp_impl_t* comp, recv_t** posted)
{
  return post_in_impl(a.rt, a.me, a.rank, a.buffer, a.size, a.tag, a.policy,
                      a.mr, comp, a.user_context, posted);
}

status_t post_once(const post_args_t& a, post_path_t path, direction_t dir,
                   comp_impl_t* comp)
{
  if (path == post_path_t::recv) return post_in(a, comp);
  if (!a.dev->backlog.empty()) return status_t(errorcode_t::retry_backlog);
  switch (path) {
    case post_path_t::eager:
      return post_out(a);
    case post_path_t::rendezvous:
      return post_rdv(a, comp);
    default:
      return post_rma(a, dir, comp);
  }
}

namespace
{

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
  post_path_t path;
  if (rma) {
    if (!a.rt->net_context->caps().rma)
      util::throw_fatal(call, ": the network backend (",
                        a.rt->net_context->caps().provider, ") has no RMA");
    check_rmr(a.rt, in ? "post_comm (get)" : "post_comm (put)", rank, a.rmr,
              a.remote_disp, size);
    path = post_path_t::rma;
  } else if (in) {
    a.policy = effective_policy(a.policy, rank, tag);
    path = post_path_t::recv;
  } else if (size > eager_limit(a.pool, a.dev) &&
             (a.upacket || a.semantic != comp_semantic_t::memory ||
              !eager_by_route(a.dev, rank, size))) {
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
    path = post_path_t::rendezvous;
  } else {
    path = post_path_t::eager;
  }
  const bool long_op =
      path == post_path_t::rendezvous || path == post_path_t::rma;

  // COMP_NULL or allow_posted(false): block, driving progress, until done.
  // COMP_NULL_RETRY promises done or retry: a rendezvous, put or get, which
  // cannot be done at once, blocks too (but may return retry).
  if (local_comp.is_empty() || !allow_posted ||
      (long_op && local_comp == COMP_NULL_RETRY)) {
    if (path == post_path_t::recv) return post_in_blocking(a);
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
    endpoint_t endpoint, buffers_view_t buffers, rbuffers_view_t rbuffers)
{
  if (!buffers.empty() || !rbuffers.empty())
    return post_list(direction, rank, local_buffer, size, local_comp, runtime,
                     device, packet_pool, matching_engine, mr, remote_disp, rmr,
                     tag, remote_comp, user_context, matching_policy,
                     allow_done, allow_posted, allow_retry, comp_semantic,
                     endpoint, buffers, rbuffers);
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
  if (static_cast<unsigned>(matching_policy) >
      static_cast<unsigned>(matching_policy_t::rank_tag))
    util::throw_fatal(call, ": matching_policy ",
                      static_cast<unsigned>(matching_policy),
                      " is not a policy (none, rank_only, tag_only, rank_tag)");
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
            common &&
                (size <= eager_limit(dev->pool, dev) ||
                 eager_by_route(dev, rank, size)) &&
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
  // a receive from a given rank (args_pass refused ANY_SOURCE) with a
  // given tag: policy rank_tag, as post_checked's effective_policy says
  if (direction == direction_t::IN &&
      __builtin_expect(common && remote_comp == RCOMP_NULL && tag != ANY_TAG &&
                           rt->default_me != nullptr,
                       1))
    return post_in_impl(rt, rt->default_me, rank, local_buffer, size, tag,
                        matching_policy_t::rank_tag, mr_t(), local_comp.p_impl,
                        user_context, nullptr);
  post_args_t a;
  lean_args(&a, rd, rank, local_buffer, size, local_comp, tag, remote_comp,
            user_context);
  return post_lean_checked(a, direction, local_comp);
}

}  // namespace lci
