#include "core/rendezvous.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "core/control.hpp"
#include "core/peer_failure.hpp"
#include "core/recv.hpp"
#include "core/transfer.hpp"
#include "resource/device.hpp"
#include "resource/matching_engine.hpp"
#include "resource/mr.hpp"
#include "resource/packet_pool.hpp"
#include "resource/runtime.hpp"
#include "util/error.hpp"

namespace lci
{

// One side of a rendezvous transfer.
class rdv_ctx_t final : public transfer_op_t
{
 public:
  bool sender;
  bool am;  // receiver of an active message: buffer is ours (am_alloc's)
  allocator_base_t* am_alloc = nullptr;  // set when am
  rdv_protocol_t protocol;
  uint32_t id = 0;
  uint32_t peer_ctx = 0;  // the other side's context id
  runtime_impl_t* rt;
  device_impl_t* dev;
  int peer;
  tag_t tag;
  char* buffer;
  size_t size;
  comp_impl_t* comp;
  void* user_context;
  mr_use_t mr;
  // transfers (sender of write/writeimm, receiver of get) or immediate-data
  // arrivals (receiver of writeimm) still to come; split: the sender's
  // writes, its RTR and the receiver's FIN, or the receiver's reads and the
  // arrivals of the head
  std::atomic<size_t> remaining{0};
  // split receiver: reads of the tail still to come (the last sends the FIN)
  std::atomic<size_t> reads_left{0};
  std::atomic<const char*> error{nullptr};
  // failed by a peer failure (fail_rdv_peer): kept until free_runtime; an
  // active message's buffer is then ours to free
  bool peer_failed = false;
  // bytes this receive holds of its device's am_gate (0: none)
  size_t gated = 0;

  ~rdv_ctx_t() override
  {
    if (peer_failed && am) am_alloc->deallocate(buffer);
  }
  void transfer_done(const net::cqe_t& cqe) override;
  // n of the steps counted by `remaining` are done; the last ends the
  // transfer (a FIN where the protocol sends one at the end)
  void steps_done(size_t n);
  // Takes the context out of the id table: true for exactly one of the
  // paths that end it (completion, refusal, peer failure), which then owns
  // it. A context failed by a peer failure is never claimed again.
  bool claim() { return rt->rdv_ctxs.take(id, this); }
  // The transfer is over: if claimed, release everything and signal the
  // completion object.
  void finish();
  void finish_claimed();
  // A transfer failed (claimed): release everything and throw.
  [[noreturn]] void fail(const char* why);
  // Leaves the device's count and gate; releases the registration
  // (claimed).
  void release();
};

namespace
{

const char* protocol_name(rdv_protocol_t p)
{
  switch (p) {
    case rdv_protocol_t::write:
      return "write";
    case rdv_protocol_t::writeimm:
      return "writeimm";
    case rdv_protocol_t::split:
      return "split";
    default:
      return "get";
  }
}

// The context a peer names, or a fatal error.
rdv_ctx_t* lookup(runtime_impl_t* rt, uint64_t id, bool sender,
                  const char* what, int from)
{
  rdv_ctx_t* ctx = rt->rdv_ctxs.get(static_cast<uint32_t>(id));
  if (!ctx || ctx->id != id || ctx->sender != sender)
    util::throw_fatal("progress: a rendezvous ", what, " from rank ", from,
                      " names transfer ", id, ", which is not in flight here");
  return ctx;
}

msg_header_t control_header(runtime_impl_t* rt, msg_type_t type, tag_t tag)
{
  msg_header_t hdr;
  hdr.tag = tag;
  hdr.rank = rt->rank_me;
  hdr.meta = msg_header_t::make_meta(type, matching_policy_t::none, 0);
  return hdr;
}

// The page size the split point of a split rendezvous is aligned to, in the
// receive buffer: the two copiers never write the same page.
constexpr uintptr_t kSplitPage = 4096;

// Receiver of a split rendezvous of `size` bytes into `buffer` from `peer`:
// the bytes of the head, which the sender writes (this side reads the
// rest). About half, each part copied directly (net::link_t::direct_min:
// neither waits for the other's progress, so a sender that does not
// progress delays the receive by no more than its own copy of a half
// would); the whole message when the route is not direct or a part would
// be smaller than a direct copy.
size_t split_head(device_impl_t* dev, int peer, const char* buffer, size_t size)
{
  const size_t direct = dev->net.direct_min(peer);
  if (direct == 0) return size;
  const uintptr_t b = reinterpret_cast<uintptr_t>(buffer);
  const uintptr_t mid = (b + size / 2 + kSplitPage - 1) & ~(kSplitPage - 1);
  const size_t head = static_cast<size_t>(mid - b);
  if (head < direct || head >= size || size - head < direct) return size;
  return head;
}

// Receiver: register or read, answer the sender. `buffer` receives
// rts.size bytes; an active message's buffer comes from `am_alloc` (null
// for a receive's buffer, the user's).
void start_recv(device_impl_t* dev, const msg_header_t& hdr, const rts_t& rts,
                char* buffer, comp_impl_t* comp, void* user_context,
                mr_t user_mr, allocator_base_t* am_alloc, size_t gated)
{
  runtime_impl_t* rt = dev->runtime;
  if (rts.protocol < static_cast<uint32_t>(rdv_protocol_t::write) ||
      rts.protocol > static_cast<uint32_t>(rdv_protocol_t::split) ||
      rts.frag_size == 0)
    util::throw_fatal("progress: a rendezvous request from rank ", hdr.rank,
                      " names unknown protocol ", rts.protocol);
  auto ctx = std::make_unique<rdv_ctx_t>();
  ctx->sender = false;
  ctx->am = am_alloc != nullptr;
  ctx->am_alloc = am_alloc;
  ctx->protocol = static_cast<rdv_protocol_t>(rts.protocol);
  ctx->peer_ctx = static_cast<uint32_t>(rts.send_ctx);
  ctx->rt = rt;
  ctx->dev = dev;
  ctx->peer = hdr.rank;
  ctx->tag = hdr.tag;
  ctx->buffer = buffer;
  ctx->size = rts.size;
  ctx->comp = comp;
  ctx->user_context = user_context;
  ctx->gated = gated;
  const bool get = ctx->protocol == rdv_protocol_t::get;
  const bool split = ctx->protocol == rdv_protocol_t::split;
  ctx->mr.acquire(rt, user_mr, buffer, rts.size, !get, "progress");

  transfer_plan_t plan{};
  // split: the sender writes the head, this side reads the rest
  const size_t head = split ? split_head(dev, hdr.rank, buffer, rts.size) : 0;
  if (split && head < rts.size) {
    plan.kind = transfer_plan_t::kind_t::read;
    plan.rank = hdr.rank;
    plan.local = buffer + head;
    plan.desc = ctx->mr.desc();
    plan.remote = net::remote_t{rts.rbase, rts.rdisp + head, rts.rkey};
    plan.size = rts.size - head;
    plan.frag =
        rts.frag_size < rt->max_rma_size ? rts.frag_size : rt->max_rma_size;
  }
  if (get) {
    plan.kind = transfer_plan_t::kind_t::read;
    plan.rank = hdr.rank;
    plan.local = buffer;
    plan.desc = ctx->mr.desc();
    plan.remote = net::remote_t{rts.rbase, rts.rdisp, rts.rkey};
    plan.size = rts.size;
    plan.frag =
        rts.frag_size < rt->max_rma_size ? rts.frag_size : rt->max_rma_size;
    ctx->remaining.store(plan.nfrags(), std::memory_order_relaxed);
  } else if (ctx->protocol == rdv_protocol_t::writeimm) {
    ctx->remaining.store(
        rts.size / rts.frag_size + (rts.size % rts.frag_size != 0),
        std::memory_order_relaxed);
  } else if (split) {
    const size_t nreads = head < rts.size ? plan.nfrags() : 0;
    ctx->reads_left.store(nreads, std::memory_order_relaxed);
    ctx->remaining.store(
        head / rts.frag_size + (head % rts.frag_size != 0) + nreads,
        std::memory_order_relaxed);
  } else {
    ctx->remaining.store(1, std::memory_order_relaxed);  // the FIN
  }
  rdv_ctx_t* raw = ctx.release();
  raw->id = rt->rdv_ctxs.add(raw);
  dev->nops_pending.fetch_add(1, std::memory_order_relaxed);
  if (get) {
    rt->rdv_get_read.fetch_add(rts.size, std::memory_order_relaxed);
    post_fragments(dev, plan, 0, raw);
  } else {
    rtr_t rtr{};
    rtr.send_ctx = rts.send_ctx;
    rtr.recv_ctx = raw->id;
    const net::remote_t r = raw->mr.remote();
    rtr.rbase = r.base;
    rtr.rdisp = r.disp;
    rtr.rkey = r.rkey;
    rtr.head = split ? head : rts.size;
    send_control(dev, hdr.rank, control_header(rt, msg_type_t::rtr, hdr.tag),
                 &rtr, sizeof(rtr));
    // the tail while the sender writes the head; the context may be gone
    // on return
    if (split && head < rts.size) {
      rt->rdv_split_read.fetch_add(rts.size - head, std::memory_order_relaxed);
      post_fragments(dev, plan, 0, raw);
    }
  }
}

rts_t parse_rts(const msg_header_t& hdr, const char* payload, size_t size)
{
  if (size != sizeof(rts_t))
    util::throw_fatal("progress: a ", size,
                      "-byte rendezvous request from rank ", hdr.rank);
  rts_t rts;
  std::memcpy(&rts, payload, sizeof(rts));
  return rts;
}

// The bound on the rendezvous active messages a device receives at once
// (resource/am_rdv_gate.hpp). A request that does not fit waits in the
// gate; whoever frees room and sees requests waiting queues one start of
// them in the device's backlog, which progress runs at the beginning of
// its next step: after the call that completed a message has returned, so
// that a receiver that frees each message as it takes it has freed the
// buffer before the next is allocated. Lost wake-ups: a leave lowers the
// state and then reads the waiting count; a request that waits raises the
// count and then reads the state (sequentially consistent), so one of the
// two sees the other.
static_assert(sizeof(msg_header_t) + sizeof(rts_t) == am_rdv_gate_t::kMsgBytes,
              "a waiting request holds the header and the RTS");

void start_waiting_am(device_impl_t* dev);

void kick_gate(device_impl_t* dev)
{
  if (dev->am_gate.kicked.exchange(true, std::memory_order_seq_cst)) return;
  dev->backlog.push([dev]() -> error_t {
    start_waiting_am(dev);
    return errorcode_t::done;
  });
}

void leave_gate(device_impl_t* dev, size_t n)
{
  am_rdv_gate_t& g = dev->am_gate;
  g.leave(n);
  if (g.nwaiting.load(std::memory_order_seq_cst) != 0) kick_gate(dev);
}

// An active message's RTS allowed through the gate (`gated` bytes of it
// held, 0 without a bound): its buffer, its receive started.
void start_am(device_impl_t* dev, const msg_header_t& hdr, const rts_t& rts,
              size_t gated)
{
  comp_impl_t* comp = dev->runtime->rcomps.get(hdr.aux(), nullptr);
  if (!comp) {
    if (gated) leave_gate(dev, gated);
    // the sender waits for an answer: tell it the message was refused
    fin_t fin{rts.send_ctx, fin_t::kRejectNoRcomp};
    send_control(dev, hdr.rank,
                 control_header(dev->runtime, msg_type_t::fin, hdr.tag), &fin,
                 sizeof(fin));
    util::throw_fatal("progress: an active message from rank ", hdr.rank,
                      " targets remote completion ", hdr.aux(),
                      ", which is not registered here");
  }
  allocator_base_t* alloc = am_allocator(dev->runtime);
  char* buf = static_cast<char*>(alloc->allocate(rts.size));
  if (!buf) {
    if (gated) leave_gate(dev, gated);
    util::throw_fatal("progress: cannot allocate ", rts.size,
                      " bytes for an active message");
  }
  try {
    start_recv(dev, hdr, rts, buf, comp, nullptr, mr_t(), alloc, gated);
  } catch (...) {
    alloc->deallocate(buf);
    if (gated) leave_gate(dev, gated);
    throw;
  }
}

// The backlog's start of the requests waiting in dev's gate: in arrival
// order, as many as fit.
void start_waiting_am(device_impl_t* dev)
{
  am_rdv_gate_t& g = dev->am_gate;
  runtime_impl_t* rt = dev->runtime;
  // cleared before the state is read: a leave from now on queues another
  g.kicked.store(false, std::memory_order_seq_cst);
  for (;;) {
    msg_header_t hdr;
    rts_t rts;
    {
      util::spin_guard_t lock(g.lock);
      if (g.waiting.empty()) return;
      const unsigned char* m = g.waiting.front().bytes;
      std::memcpy(&hdr, m, sizeof(hdr));
      std::memcpy(&rts, m + sizeof(hdr), sizeof(rts));
      // (a leave to come queues the next start)
      if (!g.try_enter(rts.size)) return;
      g.waiting.pop_front();
      g.nwaiting.fetch_sub(1, std::memory_order_seq_cst);
    }
    // the request's count in nops_pending ends after the receive it starts
    // is counted (or when it is dropped), so the device never reads drained
    // in between
    struct uncount_t {
      device_impl_t* dev;
      ~uncount_t()
      {
        dev->nops_pending.fetch_sub(1, std::memory_order_relaxed);
      }
    } uncount{dev};
    // a failed rank's request: its sender is gone, nothing to answer
    if (peer_is_failed(rt, hdr.rank)) {
      leave_gate(dev, rts.size);
      continue;
    }
    start_am(dev, hdr, rts, rts.size);
  }
}

}  // namespace

void rdv_ctx_t::release()
{
  mr.release();
  if (gated) {
    leave_gate(dev, gated);
    gated = 0;
  }
  dev->nops_pending.fetch_sub(1, std::memory_order_relaxed);
}

void rdv_ctx_t::finish()
{
  if (claim()) finish_claimed();
}

void rdv_ctx_t::finish_claimed()
{
  status_t s = done_status(peer, buffer, size, tag, user_context);
  comp_impl_t* c = comp;
  release();
  delete this;
  c->signal(s);
}

void rdv_ctx_t::fail(const char* why)
{
  const bool was_sender = sender;
  const int p = peer;
  const size_t n = size;
  const char* proto = protocol_name(protocol);
  if (am) am_alloc->deallocate(buffer);
  release();
  delete this;
  util::throw_fatal("progress: the rendezvous (", proto, ") ",
                    was_sender ? "send of " : "receive of ", n, " bytes ",
                    was_sender ? "to" : "from", " rank ", p,
                    " failed: the network reported: ", why);
}

void rdv_ctx_t::transfer_done(const net::cqe_t& cqe)
{
  if (cqe.error) {
    error.store(cqe.error, std::memory_order_relaxed);
    // tcp: the connection to a dead rank was reset; declaring the failure
    // fails this transfer too (claim() below then says so)
    network_error_is_peer_failure(rt, peer, cqe.error);
  }
  // receiver of split: the sender's buffer is no longer read, whether or
  // not the reads succeeded (a failed read fails this side only); the
  // context lives on until its last step below
  if (protocol == rdv_protocol_t::split && !sender &&
      reads_left.fetch_sub(1, std::memory_order_acq_rel) == 1 &&
      !peer_is_failed(rt, peer)) {
    fin_t fin{peer_ctx, 0};
    send_control(dev, peer, control_header(rt, msg_type_t::fin, tag), &fin,
                 sizeof(fin));
  }
  steps_done(1);
}

void rdv_ctx_t::steps_done(size_t n)
{
  if (remaining.fetch_sub(n, std::memory_order_acq_rel) != n) return;
  if (!claim()) return;  // failed by a peer failure already
  if (const char* why = error.load(std::memory_order_relaxed)) fail(why);
  // sender of write: the data is visible, tell the receiver; receiver of
  // get: the data is here, tell the sender its buffer is free
  if ((protocol == rdv_protocol_t::write && sender) ||
      (protocol == rdv_protocol_t::get && !sender)) {
    fin_t fin{peer_ctx, 0};
    send_control(dev, peer, control_header(rt, msg_type_t::fin, tag), &fin,
                 sizeof(fin));
  }
  finish_claimed();
}

status_t post_rdv(const post_args_t& a, comp_impl_t* comp)
{
  runtime_impl_t* rt = a.rt;
  if (!rt->net_context->caps().rma)
    util::throw_fatal("post_comm: size ", a.size,
                      " exceeds the eager limit and the network backend (",
                      rt->net_context->caps().provider,
                      ") has no RMA for the rendezvous protocol");
  auto ctx = std::make_unique<rdv_ctx_t>();
  ctx->sender = true;
  ctx->am = false;
  ctx->protocol = static_cast<rdv_protocol_t>(rt->rdv_protocol);
  // where both ends copy directly: split when the receiver can cut the
  // message into two direct copies; below that, a direct copy by the
  // receiver alone (get), which starts at the RTS where the sender's copy
  // waits for the RTR, and needs no progress of the sender to finish
  const size_t direct = a.dev->net.direct_min(a.rank);
  if (rt->rdv_split && direct != 0 && a.size >= direct)
    ctx->protocol = a.size / 2 >= direct + kSplitPage ? rdv_protocol_t::split
                                                      : rdv_protocol_t::get;
  ctx->rt = rt;
  ctx->dev = a.dev;
  ctx->peer = a.rank;
  ctx->tag = a.tag;
  ctx->buffer = static_cast<char*>(a.buffer);
  ctx->size = a.size;
  ctx->comp = comp;
  ctx->user_context = a.user_context;
  const bool get = ctx->protocol == rdv_protocol_t::get ||
                   ctx->protocol == rdv_protocol_t::split;
  ctx->mr.acquire(rt, a.mr, a.buffer, a.size, get, "post_comm");
  // split: the RTR's handling and the receiver's FIN (handle_rtr adds the
  // writes before it counts itself done)
  if (ctx->protocol == rdv_protocol_t::split)
    ctx->remaining.store(2, std::memory_order_relaxed);

  rdv_ctx_t* raw = ctx.release();
  raw->id = rt->rdv_ctxs.add(raw);
  rts_t rts{};
  rts.send_ctx = raw->id;
  rts.size = a.size;
  rts.frag_size = rt->max_rma_size;
  rts.protocol = static_cast<uint32_t>(raw->protocol);
  if (get) {
    const net::remote_t r = raw->mr.remote();
    rts.rbase = r.base;
    rts.rdisp = r.disp;
    rts.rkey = r.rkey;
  }
  msg_header_t hdr;
  hdr.tag = a.tag;
  hdr.rank = rt->rank_me;
  if (a.rcomp != RCOMP_NULL)
    hdr.meta = msg_header_t::make_meta(msg_type_t::rts_am, a.policy, a.rcomp);
  else
    hdr.meta =
        msg_header_t::make_meta(msg_type_t::rts_send, a.policy, a.me->index);
  a.dev->nops_pending.fetch_add(1, std::memory_order_relaxed);
  // the target failed after the post was checked: the failure's sweep of
  // the id table may have come before the add
  if (peer_is_failed(rt, a.rank) && raw->claim()) {
    raw->release();
    delete raw;
    throw_peer_failed(rt, a.rank, "post_comm");
  }
  error_t e = try_send_control(a.dev, a.pool, a.rank, hdr, &rts, sizeof(rts));
  if (e.is_retry()) {
    // not claimed: a peer failure took it and signalled its completion
    if (!raw->claim()) return status_t(errorcode_t::posted);
    raw->release();
    delete raw;
    return status_t(e.errorcode);
  }
  // raw may be complete and gone already (another thread's progress)
  return status_t(errorcode_t::posted);
}

status_t start_rdv_recv(const recv_t* recv, packet_t* pkt)
{
  msg_header_t hdr;
  std::memcpy(&hdr, pkt->data(), sizeof(hdr));
  rts_t rts;
  try {
    rts = parse_rts(hdr, pkt->data() + sizeof(hdr), pkt->length);
  } catch (...) {
    packet_pool_impl_t::put(pkt);
    throw;
  }
  auto* dev = static_cast<device_impl_t*>(pkt->arrived_on);
  packet_pool_impl_t::put(pkt);
  if (rts.size > recv->size) {
    // the sender waits for an answer: tell it the message was refused
    fin_t fin{rts.send_ctx, recv->size + 1};
    send_control(dev, hdr.rank,
                 control_header(dev->runtime, msg_type_t::fin, hdr.tag), &fin,
                 sizeof(fin));
    util::throw_fatal("post_recv: a ", rts.size, "-byte message from rank ",
                      hdr.rank, " with tag ", hdr.tag,
                      " does not fit the posted ", recv->size,
                      "-byte receive buffer");
  }
  start_recv(dev, hdr, rts, static_cast<char*>(recv->buffer), recv->comp,
             recv->user_context, recv->mr, nullptr, 0);
  return status_t(errorcode_t::posted);
}

void handle_rts_am(device_impl_t* dev, const msg_header_t& hdr,
                   const char* payload, size_t size)
{
  rts_t rts = parse_rts(hdr, payload, size);
  am_rdv_gate_t& g = dev->am_gate;
  if (g.limit == 0) return start_am(dev, hdr, rts, 0);
  bool wait;
  {
    util::spin_guard_t lock(g.lock);
    // behind requests already waiting, in arrival order
    wait = !g.waiting.empty() || !g.try_enter(rts.size);
    if (wait) {
      am_rdv_gate_t::msg_t m;
      std::memcpy(m.bytes, &hdr, sizeof(hdr));
      std::memcpy(m.bytes + sizeof(hdr), &rts, sizeof(rts));
      g.waiting.push_back(m);
      // the device is not drained while a request waits
      dev->nops_pending.fetch_add(1, std::memory_order_relaxed);
      g.nwaiting.fetch_add(1, std::memory_order_seq_cst);
    }
  }
  if (!wait) return start_am(dev, hdr, rts, rts.size);
  // nothing in flight: no leave will come to start it
  if (g.idle()) kick_gate(dev);
}

void handle_rtr(device_impl_t* dev, const msg_header_t& hdr,
                const char* payload, size_t size)
{
  if (size != sizeof(rtr_t))
    util::throw_fatal("progress: a ", size, "-byte rendezvous RTR from rank ",
                      hdr.rank);
  rtr_t rtr;
  std::memcpy(&rtr, payload, sizeof(rtr));
  rdv_ctx_t* ctx = lookup(dev->runtime, rtr.send_ctx, true, "RTR", hdr.rank);
  const bool split = ctx->protocol == rdv_protocol_t::split;
  if (split && (rtr.head == 0 || rtr.head > ctx->size))
    util::throw_fatal("progress: a rendezvous RTR from rank ", hdr.rank,
                      " asks for ", rtr.head, " bytes of a ", ctx->size,
                      "-byte message");
  ctx->peer_ctx = rtr.recv_ctx;
  transfer_plan_t plan{};
  plan.kind = ctx->protocol == rdv_protocol_t::write
                  ? transfer_plan_t::kind_t::write
                  : transfer_plan_t::kind_t::writeimm;
  plan.rank = ctx->peer;
  plan.local = ctx->buffer;
  plan.desc = ctx->mr.desc();
  plan.remote = net::remote_t{rtr.rbase, rtr.rdisp, rtr.rkey};
  plan.imm = rtr.recv_ctx;
  plan.size = split ? rtr.head : ctx->size;
  plan.frag = ctx->rt->max_rma_size;
  // write: the FIN must not overtake the data
  plan.delivered = ctx->protocol == rdv_protocol_t::write;
  if (!split) {
    ctx->remaining.store(plan.nfrags(), std::memory_order_relaxed);
    post_fragments(ctx->dev, plan, 0, ctx);
    return;
  }
  // the RTR's own step keeps the context while the writes are posted
  ctx->remaining.fetch_add(plan.nfrags(), std::memory_order_acq_rel);
  ctx->rt->rdv_split_written.fetch_add(rtr.head, std::memory_order_relaxed);
  post_fragments(ctx->dev, plan, 0, ctx);
  // a receiver that reads nothing sends no FIN
  ctx->steps_done(rtr.head == ctx->size ? 2 : 1);
}

void handle_fin(device_impl_t* dev, const msg_header_t& hdr,
                const char* payload, size_t size)
{
  if (size != sizeof(fin_t))
    util::throw_fatal("progress: a ", size, "-byte rendezvous FIN from rank ",
                      hdr.rank);
  fin_t fin;
  std::memcpy(&fin, payload, sizeof(fin));
  // write: the receiver's context; get, split, or refused: the sender's
  rdv_ctx_t* ctx = dev->runtime->rdv_ctxs.get(static_cast<uint32_t>(fin.ctx));
  const bool to_sender =
      fin.rejected != 0 || (ctx && (ctx->protocol == rdv_protocol_t::get ||
                                    ctx->protocol == rdv_protocol_t::split));
  if (!ctx || ctx->id != fin.ctx || ctx->sender != to_sender)
    util::throw_fatal("progress: a rendezvous FIN from rank ", hdr.rank,
                      " names transfer ", fin.ctx,
                      ", which is not in flight here");
  if (fin.rejected != 0) {
    const size_t n = ctx->size;
    const tag_t tag = ctx->tag;
    if (!ctx->claim()) return;  // failed by a peer failure already
    ctx->release();
    delete ctx;
    if (fin.rejected == fin_t::kRejectNoRcomp)
      util::throw_fatal("post_am: the ", n, "-byte active message to rank ",
                        hdr.rank, " with tag ", tag,
                        " was refused: its remote completion is not "
                        "registered there");
    util::throw_fatal("post_send: the ", n, "-byte message to rank ", hdr.rank,
                      " with tag ", tag,
                      " was refused: it does not fit the receiver's ",
                      fin.rejected - 1, "-byte buffer");
  }
  if (ctx->protocol == rdv_protocol_t::split) return ctx->steps_done(1);
  ctx->finish();
}

void handle_remote_write(device_impl_t* dev, uint64_t imm)
{
  runtime_impl_t* rt = dev->runtime;
  if (rt->nfailed.load(std::memory_order_relaxed) > 0) {
    // a write has no source rank: after a peer failure, one naming a
    // context that is gone was most likely sent by the failed rank
    rdv_ctx_t* c = rt->rdv_ctxs.get(static_cast<uint32_t>(imm));
    if (!c || c->id != imm || c->sender) return;
  }
  rdv_ctx_t* ctx = lookup(rt, imm, false, "write", -1);
  ctx->steps_done(1);
}

size_t fail_rdv_peer(runtime_impl_t* rt, int rank,
                     std::vector<transfer_op_t*>* dead)
{
  size_t nsignalled = 0;
  std::vector<rdv_ctx_t*> mine;
  rt->rdv_ctxs.take_if([rank](rdv_ctx_t* c) { return c->peer == rank; }, &mine);
  for (rdv_ctx_t* c : mine) {
    // the registration stays: the network may still touch the buffer
    c->peer_failed = true;
    if (c->gated) {
      leave_gate(c->dev, c->gated);
      c->gated = 0;
    }
    c->dev->nops_pending.fetch_sub(1, std::memory_order_relaxed);
    dead->push_back(c);
    // an active message being received: nobody posted it, nothing to tell
    if (c->am) continue;
    c->comp->signal(
        peer_failure_status(rank, c->buffer, c->tag, c->user_context));
    ++nsignalled;
  }
  return nsignalled;
}

}  // namespace lci
