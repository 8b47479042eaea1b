#include "core/rma.hpp"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>

#include "core/control.hpp"
#include "core/peer_failure.hpp"
#include "core/transfer.hpp"
#include "resource/device.hpp"
#include "resource/mr.hpp"
#include "resource/runtime.hpp"
#include "util/error.hpp"

namespace lci
{
namespace
{

// The header of a put's or get's signal (msg_type_t::signal), of a small
// put with signal (msg_type_t::put) or of its ack (msg_type_t::put_ack).
msg_header_t signal_header(runtime_impl_t* rt, msg_type_t type, tag_t tag,
                           rcomp_t rcomp)
{
  msg_header_t hdr;
  hdr.tag = tag;
  hdr.rank = rt->rank_me;
  hdr.meta = msg_header_t::make_meta(type, matching_policy_t::none, rcomp);
  return hdr;
}

class rma_op_t final : public transfer_op_t
{
 public:
  bool put;
  runtime_impl_t* rt;
  device_impl_t* dev;
  int rank;
  void* buffer;
  size_t size;
  tag_t tag;
  rcomp_t rcomp;
  comp_impl_t* comp;
  void* user_context;
  signal_t signal;  // what the signal message says (with rcomp)
  // a small put with signal: the signal went with the data (msg_type_t::put)
  // and the one completion is the target's put_ack
  bool signal_sent = false;
  // the target refused it: its put_ack, or the backend's key check
  bool refused = false;
  mr_use_t mr;
  std::atomic<size_t> remaining{0};
  std::atomic<const char*> error{nullptr};
  uint32_t id = 0;  // in rt->rma_ops

  // Takes the operation out of rt->rma_ops: true for exactly one of its
  // completion and a peer failure (fail_rma_peer), which then owns it.
  bool claim() { return rt->rma_ops.take(id, this); }

  void transfer_done(const net::cqe_t& cqe) override
  {
    if (cqe.error) {
      error.store(cqe.error, std::memory_order_relaxed);
      if (cqe.refused) refused = true;
      // tcp: the connection to a dead rank was reset; declaring the failure
      // fails this operation too (claim() below then says so). (A refusal
      // came from a live target.)
      if (!refused) network_error_is_peer_failure(rt, rank, cqe.error);
    }
    if (remaining.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    if (!claim()) return;  // failed by a peer failure: kept by the runtime
    mr.release();
    dev->nops_pending.fetch_sub(1, std::memory_order_relaxed);
    if (const char* why = error.load(std::memory_order_relaxed)) {
      const bool p = put;
      const int r = rank;
      const size_t n = size;
      const uint64_t disp = signal.disp;
      const char* by = refused ? "" : "the network reported: ";
      delete this;
      util::throw_fatal("progress: the ", p ? "put" : "get", " of ", n,
                        " bytes ", p ? "to" : "from", " rank ", r,
                        " (remote_disp ", disp, ") failed: ", by, why);
    }
    if (rcomp != RCOMP_NULL && !signal_sent)
      send_signal(dev, rank, tag, rcomp, signal);
    status_t s = done_status(rank, buffer, size, tag, user_context);
    comp_impl_t* c = comp;
    delete this;
    c->signal(s);
  }

  static void send_signal(device_impl_t* dev, int rank, tag_t tag,
                          rcomp_t rcomp, const signal_t& sig)
  {
    send_control(dev, rank,
                 signal_header(dev->runtime, msg_type_t::signal, tag, rcomp),
                 &sig, sizeof(sig));
  }
};

// The largest small put with signal (header, put_t and data in one message)
// in bytes: up to about 2 KiB of data one message beats writes, their ack
// and a signal; beyond, the copies through a packet cost more than the two
// crossings saved (native shm backend, docs/PERFORMANCE_LOG.md).
constexpr size_t kMaxSmallPutWire = 2048;

// A small put with signal (post_rma decides): header, put_t and data as one
// message, sent by send_small like an eager send. The target copies
// the data into its region, signals, and acks; the ack completes `op`.
// posted, or a retry code (nothing was sent).
error_t send_put(const post_args_t& a, rma_op_t* op)
{
  const msg_header_t hdr = signal_header(a.rt, msg_type_t::put, a.tag, a.rcomp);
  const put_t put{op->signal, op->id};
  char head[sizeof(hdr) + sizeof(put)];
  std::memcpy(head, &hdr, sizeof(hdr));
  std::memcpy(head + sizeof(hdr), &put, sizeof(put));
  return send_small(a.dev, a.pool, a.rank, head, sizeof(head), a.buffer,
                    a.size);
}

// The target's side of a put or get with signal: its remote completion is
// signalled with the address of the bytes in the region. `data` (a small
// put's bytes, msg_type_t::put) is copied there first.
void land_signal(device_impl_t* dev, const msg_header_t& hdr,
                 const signal_t& sig, const char* data)
{
  runtime_impl_t* rt = dev->runtime;
  comp_impl_t* comp = rt->rcomps.get(hdr.aux(), nullptr);
  if (!comp)
    util::throw_fatal("progress: a put or get with signal from rank ", hdr.rank,
                      " targets remote completion ", hdr.aux(),
                      ", which is not registered here");
  // the address of the bytes at this end, if the region is still registered
  mr_impl_t* mr = rt->mrs.find(sig.rkey);
  if (mr && (sig.disp > mr->size || sig.size > mr->size - sig.disp))
    util::throw_fatal("progress: a put or get with signal from rank ", hdr.rank,
                      " names bytes [", sig.disp, ", +", sig.size,
                      ") outside its ", mr->size, "-byte region");
  if (data) {
    if (!mr)
      util::throw_fatal("progress: a ", sig.size,
                        "-byte put with signal from rank ", hdr.rank,
                        " targets a region (key ", sig.rkey,
                        ") that is not registered here");
    std::memcpy(mr->address + sig.disp, data, sig.size);
  }
  status_t s(errorcode_t::done);
  s.rank = hdr.rank;
  s.tag = hdr.tag;
  s.size = sig.size;
  s.buffer = mr ? mr->address + sig.disp : nullptr;
  comp->signal(s);
}

}  // namespace

status_t post_rma(const post_args_t& a, direction_t direction,
                  comp_impl_t* comp)
{
  const bool put = direction == direction_t::OUT;
  const char* call = put ? "post_comm (put)" : "post_comm (get)";
  runtime_impl_t* rt = a.rt;
  signal_t sig{a.rmr.opaque_rkey, a.remote_disp, a.size};

  if (a.size == 0) {
    // nothing to move; a signal still tells the target
    if (a.rcomp != RCOMP_NULL) {
      error_t e = try_send_control(
          a.dev, a.pool, a.rank,
          signal_header(rt, msg_type_t::signal, a.tag, a.rcomp), &sig,
          sizeof(sig));
      if (e.is_retry()) return status_t(e.errorcode);
    }
    return done_status(a);
  }

  auto op = std::make_unique<rma_op_t>();
  op->put = put;
  op->rt = rt;
  op->dev = a.dev;
  op->rank = a.rank;
  op->buffer = a.buffer;
  op->size = a.size;
  op->tag = a.tag;
  op->rcomp = a.rcomp;
  op->comp = comp;
  op->user_context = a.user_context;
  op->signal = sig;
  // a small put with signal: one message with the data (no registration);
  // the target's ack completes the put, so the completion still means the
  // data is there
  const size_t wire = sizeof(msg_header_t) + sizeof(put_t) + a.size;
  const bool small =
      put && a.rcomp != RCOMP_NULL && wire <= kMaxSmallPutWire &&
      wire <= sizeof(msg_header_t) + eager_payload_limit(a.pool, a.dev);
  op->signal_sent = small;
  if (!small) op->mr.acquire(rt, a.mr, a.buffer, a.size, false, call);

  transfer_plan_t plan{};
  plan.kind =
      put ? transfer_plan_t::kind_t::write : transfer_plan_t::kind_t::read;
  plan.rank = a.rank;
  plan.local = static_cast<char*>(a.buffer);
  plan.desc = op->mr.desc();
  plan.remote.base = a.rmr.base;
  plan.remote.disp = a.remote_disp;
  plan.remote.rkey = a.rmr.opaque_rkey;
  plan.size = a.size;
  plan.frag = rt->max_rma_size;
  plan.delivered = true;
  const size_t n = small ? 1 : plan.nfrags();
  op->remaining.store(n, std::memory_order_relaxed);

  // the first fragment decides between posted and retry
  a.dev->nops_pending.fetch_add(1, std::memory_order_relaxed);
  rma_op_t* raw = op.release();
  raw->id = rt->rma_ops.add(raw);
  // the target failed after the post was checked: the failure's sweep may
  // have come before the add
  if (peer_is_failed(rt, a.rank) && raw->claim()) {
    a.dev->nops_pending.fetch_sub(1, std::memory_order_relaxed);
    delete raw;
    throw_peer_failed(rt, a.rank, call);
  }
  error_t e = small ? send_put(a, raw) : post_fragment(a.dev, plan, 0, raw);
  if (e.is_retry()) {
    // not claimed: a peer failure took it and signalled its completion
    if (!raw->claim()) return status_t(errorcode_t::posted);
    a.dev->nops_pending.fetch_sub(1, std::memory_order_relaxed);
    delete raw;
    return status_t(e.errorcode);
  }
  // raw may complete at once on another thread
  if (n > 1 && !small) post_fragments(a.dev, plan, 1, raw);
  return status_t(errorcode_t::posted);
}

void handle_signal(device_impl_t* dev, const msg_header_t& hdr,
                   const char* payload, size_t size)
{
  if (size != sizeof(signal_t))
    util::throw_fatal("progress: a ", size, "-byte signal message from rank ",
                      hdr.rank);
  signal_t sig;
  std::memcpy(&sig, payload, sizeof(sig));
  land_signal(dev, hdr, sig, nullptr);
}

void handle_put(device_impl_t* dev, const msg_header_t& hdr,
                const char* payload, size_t size)
{
  put_t put;
  if (size < sizeof(put))
    util::throw_fatal("progress: a ", size, "-byte put message from rank ",
                      hdr.rank, " (shorter than its signal)");
  std::memcpy(&put, payload, sizeof(put));
  if (put.signal.size != size - sizeof(put))
    util::throw_fatal("progress: a put message from rank ", hdr.rank,
                      " carries ", size - sizeof(put),
                      " bytes but its signal says ", put.signal.size);
  // the initiator's put completes with the answer, landed or refused
  put_ack_t ack{put.ctx, 0};
  const msg_header_t ack_hdr =
      signal_header(dev->runtime, msg_type_t::put_ack, 0, 0);
  try {
    land_signal(dev, hdr, put.signal, payload + sizeof(put));
  } catch (const fatal_error&) {
    ack.refused = 1;
    send_control(dev, hdr.rank, ack_hdr, &ack, sizeof(ack));
    throw;
  }
  send_control(dev, hdr.rank, ack_hdr, &ack, sizeof(ack));
}

void handle_put_ack(device_impl_t* dev, const msg_header_t& hdr,
                    const char* payload, size_t size)
{
  put_ack_t ack;
  if (size != sizeof(ack))
    util::throw_fatal("progress: a ", size, "-byte put ack from rank ",
                      hdr.rank);
  std::memcpy(&ack, payload, sizeof(ack));
  // the id names an operation of rma_ops only if that operation carries it
  // (a stale or forged id is refused, never followed)
  auto* op = ack.ctx > UINT32_MAX
                 ? nullptr
                 : static_cast<rma_op_t*>(dev->runtime->rma_ops.get(
                       static_cast<uint32_t>(ack.ctx)));
  if (!op || op->id != ack.ctx || !op->signal_sent || op->rank != hdr.rank)
    util::throw_fatal("progress: a put ack from rank ", hdr.rank,
                      " names operation ", ack.ctx,
                      ", which is no put with signal to that rank awaiting "
                      "one");
  net::cqe_t c{};
  c.kind = net::cqe_t::kind_t::write;
  c.ctx = op;
  c.rank = hdr.rank;
  if (ack.refused) {
    op->refused = true;
    c.error =
        "the target refused it (its remote completion or region is not "
        "registered there)";
  }
  op->transfer_done(c);
}

size_t fail_rma_peer(runtime_impl_t* rt, int rank,
                     std::vector<transfer_op_t*>* dead)
{
  std::vector<transfer_op_t*> mine;
  rt->rma_ops.take_if(
      [rank](transfer_op_t* op) {
        return static_cast<rma_op_t*>(op)->rank == rank;
      },
      &mine);
  for (transfer_op_t* p : mine) {
    auto* op = static_cast<rma_op_t*>(p);
    // the registration stays (released when the runtime deletes the op):
    // the network may still touch the buffer
    op->dev->nops_pending.fetch_sub(1, std::memory_order_relaxed);
    dead->push_back(op);
    op->comp->signal(
        peer_failure_status(rank, op->buffer, op->tag, op->user_context));
  }
  return mine.size();
}

}  // namespace lci
