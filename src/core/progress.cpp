#include "core/progress.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <typeinfo>
#include <vector>

#include "comp/counter.hpp"
#include "comp/cq.hpp"
#include "comp/sync.hpp"
#include "comp/zero_copy.hpp"
#include "core/am_packet.hpp"
#include "core/coll_support.hpp"
#include "core/peer_failure.hpp"
#include "core/protocol.hpp"
#include "core/recv.hpp"
#include "core/rendezvous.hpp"
#include "core/rma.hpp"
#include "core/send_comp.hpp"
#include "core/transfer.hpp"
#include "resource/endpoint.hpp"
#include "resource/matching_engine.hpp"
#include "resource/packet_pool.hpp"
#include "resource/raw_net.hpp"
#include "resource/runtime.hpp"
#include "util/copy.hpp"
#include "util/error.hpp"
#include "util/idle.hpp"
#include "util/log.hpp"

namespace lci
{

void deliver_to_engine(matching_engine_impl_t* me, packet_t* pkt)
{
  msg_header_t hdr;
  std::memcpy(&hdr, pkt->data(), sizeof(hdr));
  auto key = me->key(hdr.rank, hdr.tag, hdr.policy());
  void* recv = me->insert(key, pkt, matching_engine_impl_t::type_t::send);
  if (recv) complete_recv(static_cast<recv_t*>(recv), pkt, true);
}

void adopt_early_sends(runtime_impl_t* rt, matching_engine_impl_t* me)
{
  std::vector<packet_t*> mine;
  {
    std::lock_guard<std::mutex> lock(rt->early_mu);
    auto& list = rt->early_sends;
    size_t kept = 0;
    for (auto& e : list) {
      if (e.first == me->index)
        mine.push_back(e.second);
      else
        list[kept++] = e;
    }
    list.resize(kept);
  }
  for (packet_t* pkt : mine) deliver_to_engine(me, pkt);
}

void drop_early_sends(runtime_impl_t* rt)
{
  std::lock_guard<std::mutex> lock(rt->early_mu);
  for (auto& e : rt->early_sends) packet_pool_impl_t::put(e.second);
  rt->early_sends.clear();
}
namespace
{

void refill_recvs(device_impl_t* dev)
{
  const int64_t max = dev->recv_target;
  const size_t size = dev->pool->attr.packet_size;
  while (dev->nrecvs_posted.load(std::memory_order_relaxed) < max) {
    if (dev->nrecvs_posted.fetch_add(1, std::memory_order_relaxed) >= max) {
      dev->nrecvs_posted.fetch_sub(1, std::memory_order_relaxed);
      break;
    }
    packet_t* p = dev->pool->get();
    if (p) {
      p->recv_owner = dev;
      if (dev->net.post_recv(p->data(), size, p).is_posted()) continue;
      p->recv_owner = nullptr;
      packet_pool_impl_t::put(p);
    } else if (!dev->recv_starved.load(std::memory_order_relaxed)) {
      dev->recv_starved.store(true, std::memory_order_relaxed);
    }
    dev->nrecvs_posted.fetch_sub(1, std::memory_order_relaxed);
    return;
  }
  if (dev->recv_starved.load(std::memory_order_relaxed))
    dev->recv_starved.store(false, std::memory_order_relaxed);
}

// Signals an active message's completion object. A completion queue, the
// common target, takes the status in its slot here: no virtual call and no
// copy of the status through the stack (the built-in classes are final and
// allocated by this library, so the type_info addresses identify them).
inline void signal_am(comp_impl_t* comp, const status_t& s)
{
  const std::type_info* t = &typeid(*comp);
  if (__builtin_expect(t == &typeid(lcrq_cq_t), 1))
    return static_cast<lcrq_cq_t*>(comp)->push(s);
  if (t == &typeid(array_cq_t)) return static_cast<array_cq_t*>(comp)->push(s);
  comp->signal(s);
}

// The spare buffer of this thread for its next small active message with
// the default allocator: the delivery lies between a message's arrival
// and what its receiver does next (a ping-pong's reply), so it takes a
// buffer malloc'd before, while this thread's progress found nothing to
// do (progress_device), instead of calling malloc there. The receiver
// frees it with std::free like any active message's buffer. Its value:
// 0 while this thread has delivered no small active message (no spare is
// made for a thread that never needs one), kSpareWanted when the last one
// took the spare (or found none), else the spare's address.
// initial-exec: a fixed offset from the thread pointer (see
// resource/packet_pool.cpp)
constexpr uintptr_t kSpareWanted = 1;
#if defined(__GNUC__) && !defined(__APPLE__)
thread_local uintptr_t g_am_spare __attribute__((tls_model("initial-exec"))) =
    0;
#else
thread_local uintptr_t g_am_spare = 0;
#endif

// Frees the thread's spare when the thread exits (registered by the first
// refill, so the delivery and the idle poll test a plain word; a spare
// made by a progress call from a thread-exit destructor that runs after
// this one is not freed).
struct am_spare_owner_t {
  ~am_spare_owner_t()
  {
    if (g_am_spare > kSpareWanted)
      std::free(reinterpret_cast<void*>(g_am_spare));
    g_am_spare = 0;
  }
};

// A buffer of `size` bytes for an active message: the spare when it is
// there and large enough, else malloc's.
inline void* am_buffer(size_t size)
{
  if (__builtin_expect(size <= kAmSpareBytes, 1)) {
    const uintptr_t s = g_am_spare;
    g_am_spare = kSpareWanted;
    if (__builtin_expect(s > kSpareWanted, 1))
      return reinterpret_cast<void*>(s);
  }
  return std::malloc(size);
}

// progress_device found nothing to do and the last small active message
// took the spare: a new one (left wanted if malloc fails: the next idle
// poll tries again).
[[gnu::noinline]] void refill_am_spare()
{
  static thread_local am_spare_owner_t owner;
  if (void* p = std::malloc(kAmSpareBytes))
    g_am_spare = reinterpret_cast<uintptr_t>(p);
}

// An active message: copy it out (of the packet `pkt`, or of the scratch
// buffer when pkt is null) and signal the target's registered completion
// object. Always inline: it is the body of the in-place delivery of an
// active message (deliver_in_place), the common receive of a stream of
// them; deliver_am is its out-of-line copy for every other path.
[[gnu::always_inline]] inline void deliver_am_inline(runtime_impl_t* rt,
                                                     const msg_header_t& hdr,
                                                     const char* payload,
                                                     size_t size, packet_t* pkt)
{
  comp_impl_t* comp = rt->rcomps.get(hdr.aux(), nullptr);
  if (!comp) {
    if (pkt) packet_pool_impl_t::put(pkt);
    util::throw_fatal("progress: an active message from rank ", hdr.rank,
                      " targets remote completion ", hdr.aux(),
                      ", which is not registered here");
  }
  void* buf = nullptr;
  if (__builtin_expect(comp::is_zero_copy(comp), 0) &&
      (!rt->default_pool || size + packet_pool_impl_t::kHeaderBytes <=
                                rt->default_pool->attr.packet_size)) {
    // zero_copy_am: the payload in a packet (core/am_packet.cpp); an eager
    // message larger than a packet (a route with a larger eager limit)
    // comes in an allocator buffer, as a rendezvous one does
    buf = am_packet(rt, hdr, payload, size, pkt);
    pkt = nullptr;
  } else if (size > 0 && !is_counter(comp)) {
    // (a counter only counts: nobody would free a copy of the payload)
    allocator_base_t* a = rt->allocator.load(std::memory_order_acquire);
    buf = a ? a->allocate(size) : am_buffer(size);
    if (!buf) {
      if (pkt) packet_pool_impl_t::put(pkt);
      util::throw_fatal("progress: cannot allocate ", size,
                        " bytes for an active message");
    }
    util::copy_bytes(buf, payload, size);
  }
  if (pkt) packet_pool_impl_t::put(pkt);
  status_t s(errorcode_t::done);
  s.rank = hdr.rank;
  s.buffer = buf;
  s.size = size;
  s.tag = hdr.tag;
  signal_am(comp, s);
}

void deliver_am(runtime_impl_t* rt, const msg_header_t& hdr,
                const char* payload, size_t size, packet_t* pkt)
{
  deliver_am_inline(rt, hdr, payload, size, pkt);
}

// A message given in place (`len` bytes at `data`) as a packet of its own,
// to wait in a matching engine: one of the device's pool, or a heap copy
// under pressure (the pool dry, see deliver_send) or when the pool's
// packets are too small; nullptr when memory is short.
packet_t* packet_of_bytes(device_impl_t* dev, const char* data, size_t len)
{
  packet_t* p = nullptr;
  if (len <= dev->pool->attr.packet_size &&
      !dev->recv_starved.load(std::memory_order_relaxed))
    p = dev->pool->get();
  if (p) {
    p->recv_owner = nullptr;
    util::copy_bytes(p->data(), data, len);
  } else {
    p = packet_pool_impl_t::heap_packet(data, len);
    if (!p) return nullptr;
  }
  p->length = len - sizeof(msg_header_t);
  p->arrived_on = dev;
  return p;
}

[[noreturn]] void throw_no_memory(const msg_header_t& hdr, size_t len)
{
  util::throw_fatal("progress: cannot allocate ", len,
                    " bytes to keep a message from rank ", hdr.rank,
                    " that no receive waits for");
}

// The matching engine a send names, else nullptr after keeping or
// dropping the packet (an engine not allocated here yet, or freed).
matching_engine_impl_t* engine_of(runtime_impl_t* rt, const msg_header_t& hdr,
                                  device_impl_t* dev, packet_t** pkt,
                                  const char* data, size_t len)
{
  matching_engine_impl_t* me = rt->matching_engines.get(hdr.aux(), nullptr);
  if (me) return me;
  // Not allocated here yet: kept until it is (alloc_matching_engine
  // checks the list after publishing the engine, so re-check under the
  // lock). An index below the count was allocated and freed: an error.
  std::unique_lock<std::mutex> lock(rt->early_mu);
  me = rt->matching_engines.get(hdr.aux(), nullptr);
  if (me) return me;
  if (hdr.aux() >= rt->matching_engines.size()) {
    if (!*pkt) *pkt = packet_of_bytes(dev, data, len);
    if (!*pkt) throw_no_memory(hdr, len);
    rt->early_sends.emplace_back(hdr.aux(), *pkt);
    return nullptr;
  }
  lock.unlock();
  if (*pkt) packet_pool_impl_t::put(*pkt);
  util::throw_fatal("progress: a message from rank ", hdr.rank,
                    " targets matching engine ", hdr.aux(),
                    ", which was freed here");
}

// A send: match it with a posted receive, or leave it waiting in the
// matching engine (an unexpected message).
void deliver_send(runtime_impl_t* rt, const msg_header_t& hdr, packet_t* pkt,
                  size_t size)
{
  pkt->length = size;
  // Under pressure (the device's last re-posting of receives found its pool
  // empty), a message that may wait unmatched gives its packet back and
  // waits in a heap copy: otherwise unexpected messages can hold every
  // packet, no receive is re-posted, and the sends that would match them
  // never arrive.
  auto* dev = static_cast<device_impl_t*>(pkt->arrived_on);
  if (dev && dev->recv_starved.load(std::memory_order_relaxed))
    pkt = packet_pool_impl_t::detach(pkt, sizeof(msg_header_t) + size);
  matching_engine_impl_t* me =
      engine_of(rt, hdr, dev, &pkt, pkt->data(), sizeof(msg_header_t) + size);
  if (me) deliver_to_engine(me, pkt);
}

struct bytes_t {
  device_impl_t* dev;
  const char* data;
  size_t len;
};

void* make_packet(void* ctx)
{
  auto* b = static_cast<bytes_t*>(ctx);
  return packet_of_bytes(b->dev, b->data, b->len);
}

// An eager send given in place: copied straight into the receive waiting
// for it, else into a packet that waits in the engine.
void deliver_send_bytes(device_impl_t* dev, const msg_header_t& hdr,
                        const char* data, size_t len)
{
  runtime_impl_t* rt = dev->runtime;
  packet_t* pkt = nullptr;
  matching_engine_impl_t* me = engine_of(rt, hdr, dev, &pkt, data, len);
  if (!me) return;
  bytes_t b{dev, data, len};
  void* recv =
      me->insert_lazy(me->key(hdr.rank, hdr.tag, hdr.policy()),
                      matching_engine_impl_t::type_t::send, make_packet, &b);
  if (recv == matching_engine_impl_t::kNotInserted) throw_no_memory(hdr, len);
  if (recv)
    complete_recv_eager(static_cast<recv_t*>(recv), hdr,
                        data + sizeof(msg_header_t), len - sizeof(msg_header_t),
                        nullptr, true);
}

// A received message, `len` bytes at `data`: in the packet `pkt` (a
// pre-posted receive), or in place (pkt null: a scratch buffer, valid
// during this call only).
void deliver_bytes(device_impl_t* dev, const char* data, size_t len,
                   packet_t* pkt)
{
  // nothing below trusts a header that fails these checks (a corrupt or
  // hostile message is dropped and reported, never followed)
  msg_header_t hdr;
  if (const char* bad = check_message(data, len, dev->runtime->rank_n, &hdr)) {
    int32_t rank = -1;
    if (len >= sizeof(msg_header_t))
      std::memcpy(&rank, data + offsetof(msg_header_t, rank), sizeof(rank));
    if (pkt) packet_pool_impl_t::put(pkt);
    util::throw_fatal("progress: dropped a malformed ", len,
                      "-byte message (claims rank ", rank, "): ", bad);
  }
  size_t size = len - sizeof(hdr);
  // what a failed rank sent before it died is dropped: the operations it
  // belonged to have been failed here
  if (peer_is_failed(dev->runtime, static_cast<int>(hdr.rank))) {
    if (pkt) packet_pool_impl_t::put(pkt);
    return;
  }
  // any message says its sender is alive (peer_timeout)
  note_heard(dev->runtime, hdr.rank);
  switch (hdr.type()) {
    case msg_type_t::am:
      deliver_am(dev->runtime, hdr, data + sizeof(hdr), size, pkt);
      return;
    case msg_type_t::send:
      if (!pkt) return deliver_send_bytes(dev, hdr, data, len);
      pkt->arrived_on = dev;
      deliver_send(dev->runtime, hdr, pkt, size);
      return;
    case msg_type_t::rts_send:  // matched like a send (rendezvous.cpp)
      if (!pkt) {
        pkt = packet_of_bytes(dev, data, len);
        if (!pkt) throw_no_memory(hdr, len);
      }
      pkt->arrived_on = dev;
      deliver_send(dev->runtime, hdr, pkt, size);
      return;
    default:
      break;
  }
  // control messages: handled from the bytes; a packet then goes back
  struct put_back_t {
    packet_t* p;
    ~put_back_t()
    {
      if (p) packet_pool_impl_t::put(p);
    }
  } put_back{pkt};
  const char* payload = data + sizeof(hdr);
  switch (hdr.type()) {
    case msg_type_t::rts_am:
      handle_rts_am(dev, hdr, payload, size);
      break;
    case msg_type_t::rtr:
      handle_rtr(dev, hdr, payload, size);
      break;
    case msg_type_t::fin:
      handle_fin(dev, hdr, payload, size);
      break;
    case msg_type_t::signal:
      handle_signal(dev, hdr, payload, size);
      break;
    case msg_type_t::put:
      handle_put(dev, hdr, payload, size);
      break;
    case msg_type_t::put_ack:
      handle_put_ack(dev, hdr, payload, size);
      break;
    case msg_type_t::heartbeat:  // noted above
      break;
    default:
      util::throw_fatal("progress: message of unknown type ",
                        static_cast<uint32_t>(hdr.type()), " from rank ",
                        hdr.rank);
  }
}

}  // namespace

void deliver_message(device_impl_t* dev, packet_t* pkt, size_t len)
{
  pkt->recv_owner = nullptr;
  dev->nrecvs_posted.fetch_sub(1, std::memory_order_relaxed);
  deliver_bytes(dev, pkt->data(), len, pkt);
}

void deliver_in_place(device_impl_t* dev, const char* data, size_t len)
{
  // the common messages, an eager send or active message that passes
  // check_message, from a live peer: delivered here (deliver_bytes takes
  // every other)
  runtime_impl_t* rt = dev->runtime;
  msg_header_t hdr;
  if (__builtin_expect(len >= sizeof(hdr), 1)) {
    std::memcpy(&hdr, data, sizeof(hdr));
    if (__builtin_expect(is_good_data_header(hdr, rt->rank_n) &&
                             !peer_is_failed(rt, hdr.rank),
                         1)) {
      note_heard(rt, hdr.rank);
      if (hdr.type() == msg_type_t::am)
        return deliver_am_inline(rt, hdr, data + sizeof(hdr), len - sizeof(hdr),
                                 nullptr);
      return deliver_send_bytes(dev, hdr, data, len);
    }
  }
  deliver_bytes(dev, data, len, nullptr);
}

namespace
{

// "network backend ofi (provider tcp;ofi_rxm)": the backend in force, for
// the message of a completion error it reported.
std::string backend_in_use(const device_impl_t* dev)
{
  const net::caps_t& caps = dev->runtime->net_context->caps();
  std::string out = "network backend " + caps.backend;
  if (!caps.provider.empty() && caps.provider != caps.backend)
    out += " (provider " + caps.provider + ")";
  return out;
}

// A send or receive the network failed: give its packet back, then report,
// unless it was a peer failure (declared, and reported by progress).
void message_failed(device_impl_t* dev, const net::cqe_t& c)
{
  auto* pkt = static_cast<packet_t*>(c.ctx);
  if (c.kind == net::cqe_t::kind_t::send) {
    dev->nsends_pending.fetch_sub(1, std::memory_order_relaxed);
  } else {
    pkt->recv_owner = nullptr;
    dev->nrecvs_posted.fetch_sub(1, std::memory_order_relaxed);
  }
  if (pkt) packet_pool_impl_t::put(pkt);
  if (network_error_is_peer_failure(dev->runtime, c.rank, c.error)) {
    // a message of ours to that rank was lost: this rank felt the failure
    if (c.kind == net::cqe_t::kind_t::send && c.rank >= 0)
      note_peer_failure_felt(dev->runtime, c.rank);
    return;
  }
  util::throw_fatal(
      "progress: completion error from the ", backend_in_use(dev), " on a ",
      c.kind == net::cqe_t::kind_t::send ? "send" : "receive", ": ", c.error);
}

// One completion.
void handle_cqe(device_impl_t* dev, const net::cqe_t& c)
{
  // a raw operation's (net_post_*: a device that net_poll_cq should have
  // polled): not one of ours, dropped
  if (__builtin_expect(
          c.kind != net::cqe_t::kind_t::message && raw_op_t::is_tagged(c.ctx),
          0))
    return raw_op_t::drop(c.ctx);
  switch (c.kind) {
    case net::cqe_t::kind_t::send:
      if (c.error) return message_failed(dev, c);
      // signals a network-semantic send's completion, returns the packet
      complete_send(dev, static_cast<packet_t*>(c.ctx));
      return;
    case net::cqe_t::kind_t::recv:
      if (c.error) return message_failed(dev, c);
      deliver_message(dev, static_cast<packet_t*>(c.ctx), c.length);
      return;
    case net::cqe_t::kind_t::message:
      deliver_in_place(dev, static_cast<const char*>(c.ctx), c.length);
      return;
    case net::cqe_t::kind_t::write:
    case net::cqe_t::kind_t::read:
      static_cast<transfer_op_t*>(c.ctx)->transfer_done(c);
      return;
    case net::cqe_t::kind_t::remote_write:
      if (c.error) {
        if (network_error_is_peer_failure(dev->runtime, c.rank, c.error))
          return;
        util::throw_fatal("progress: completion error from the ",
                          backend_in_use(dev),
                          " on an incoming write: ", c.error);
      }
      handle_remote_write(dev, c.imm);
      return;
  }
}

// The pool of `dev` is dry and its owner waits: the unexpected messages
// that arrived before the pool ran dry (deliver_send detaches only later
// arrivals) may hold every packet while what would match them waits for a
// packet (a send in the backlog ahead of an RTR, say): a cycle. Every
// unexpected message holding a packet of this pool, in any matching engine
// or in early_sends, moves to a heap copy and its packet goes back.
// Returns the number of packets freed.
size_t release_held_packets(device_impl_t* dev)
{
  runtime_impl_t* rt = dev->runtime;
  packet_pool_impl_t* pool = dev->pool;
  std::vector<packet_t*> freed;
  // every packet is held once at most: no reallocation under a bucket lock
  freed.reserve(pool->attr.npackets);
  auto copy = [pool, &freed](void* v) -> void* {
    auto* p = static_cast<packet_t*>(v);
    if (!pool->contains(p) || freed.size() == freed.capacity()) return v;
    packet_t* h =
        packet_pool_impl_t::heap_copy(p, sizeof(msg_header_t) + p->length);
    if (!h) return v;
    freed.push_back(p);
    return h;
  };
  for (size_t i = 0; i < rt->matching_engines.size(); ++i)
    if (matching_engine_impl_t* me = rt->matching_engines.get(i, nullptr))
      me->replace_values(matching_engine_impl_t::type_t::send, copy);
  {
    std::lock_guard<std::mutex> lock(rt->early_mu);
    for (auto& e : rt->early_sends)
      e.second = static_cast<packet_t*>(copy(e.second));
  }
  for (packet_t* p : freed) packet_pool_impl_t::put(p);
  return freed.size();
}

// Counts the progress steps while the pool is dry, and scans for held
// packets every starved_scan_after of them (doubling that after a scan
// that freed nothing, up to ~1M steps; back to 64 once the pool is no
// longer dry). Steps that found work count too: messages that a backend
// hands over in place need no receive, so they can keep every step busy
// while the messages that do need one (hybrid: the network route's) wait
// for a receive that the dry pool cannot re-post.
size_t progress_starved(device_impl_t* dev)
{
  if (!dev->recv_starved.load(std::memory_order_relaxed) &&
      !dev->backlog.waiting_for_packet()) {
    if (dev->starved_steps.load(std::memory_order_relaxed) != 0)
      dev->starved_steps.store(0, std::memory_order_relaxed);
    if (dev->starved_scan_after.load(std::memory_order_relaxed) != 64)
      dev->starved_scan_after.store(64, std::memory_order_relaxed);
    return 0;
  }
  uint32_t steps = dev->starved_steps.fetch_add(1, std::memory_order_relaxed);
  uint32_t after = dev->starved_scan_after.load(std::memory_order_relaxed);
  if (steps + 1 < after) return 0;
  dev->starved_steps.store(0, std::memory_order_relaxed);
  size_t n = release_held_packets(dev);
  dev->starved_scan_after.store(n > 0 ? 64 : std::min(after * 2, 1u << 20),
                                std::memory_order_relaxed);
  if (n > 0) {
    dev->held_released.fetch_add(n, std::memory_order_relaxed);
    // the packets are in this thread's deque: the backlog first, then the
    // receives
    n += dev->backlog.drain();
    refill_recvs(dev);
  }
  return n;
}

// Some pre-posted receive was consumed, or the last re-posting found the
// pool empty.
inline bool needs_refill(const device_impl_t* dev)
{
  return dev->nrecvs_posted.load(std::memory_order_relaxed) <
             dev->recv_target ||
         dev->recv_starved.load(std::memory_order_relaxed);
}

// After a poll that found n things to do: re-posts receives, and counts
// the step while the pool is dry (progress_starved). Out of line: the
// common poll needs none of it (needs_upkeep).
[[gnu::noinline]] size_t progress_upkeep(device_impl_t* dev, size_t n)
{
  if (needs_refill(dev)) refill_recvs(dev);
  // (a step that found work, nothing dry and nothing counted: the common
  // re-posting of a receive)
  if (n != 0 && !dev->recv_starved.load(std::memory_order_relaxed) &&
      dev->starved_steps.load(std::memory_order_relaxed) == 0 &&
      dev->starved_scan_after.load(std::memory_order_relaxed) == 64)
    return n;
  return n + progress_starved(dev);
}

// Whether progress_upkeep has anything to do after a poll that found n
// things: a receive to re-post, a dry pool (or steps counted while it
// was), or its scan interval to reset (one test on one cache line in the
// common case; the backlog waiting for a packet starts the count only in
// a step that found nothing).
inline bool needs_upkeep(const device_impl_t* dev, size_t n)
{
  // (bitwise: one branch; the loads share the device's counters line)
  return (dev->nrecvs_posted.load(std::memory_order_relaxed) <
          dev->recv_target) |
         dev->recv_starved.load(std::memory_order_relaxed) |
         (dev->starved_steps.load(std::memory_order_relaxed) != 0) |
         (dev->starved_scan_after.load(std::memory_order_relaxed) != 64) |
         (n == 0 && dev->backlog.waiting_for_packet());
}

// The completions of one poll that this thread is handling, in order: a
// stack of them, innermost first, since handling one may progress a device
// (a handler or completion callback that waits for more traffic). Until
// the batch is released (net.hpp, poll_comp), a backend that lent the
// messages in place holds them, and its device gives nothing more; a
// nested progress step on the same device therefore first handles the rest
// of the batch and releases it (finish_batches), so the nested step
// proceeds, and every peer's messages are still handled in the order they
// came. The message whose handling polled is done with its bytes by then:
// the core copies them out before it signals any completion. A poll of one
// completion that lent nothing needs no frame: nothing of it is left for a
// nested step to finish.
struct batch_t {
  device_impl_t* dev;
  const net::cqe_t* cqes;
  size_t n;  // 0 once released
  size_t i;  // the completion being handled
  batch_t* outer;
};
// initial-exec: a fixed offset from the thread pointer (see
// resource/packet_pool.cpp)
#if defined(__GNUC__) && !defined(__APPLE__)
thread_local batch_t* g_batches __attribute__((tls_model("initial-exec"))) =
    nullptr;
#else
thread_local batch_t* g_batches = nullptr;
#endif

// The completions of `b` after the one being handled (b->i), each once
// even if one of them throws (the shared cursor b->i: a step nested in one
// of them carries on from there), then its release; the first error is
// rethrown.
void finish_batch(batch_t* b)
{
  std::exception_ptr first_error;
  while (++b->i < b->n) {
    try {
      handle_cqe(b->dev, b->cqes[b->i]);
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
    }
  }
  if (const size_t n = b->n) {
    b->n = 0;
    b->dev->net.release(b->cqes, n);
  }
  if (first_error) std::rethrow_exception(first_error);
}

// A progress step on `dev` from inside the handling of a batch of this
// thread: a batch of `dev` still held is finished first. Out of line: the
// common step is not nested.
[[gnu::noinline]] void finish_batches(device_impl_t* dev)
{
  for (batch_t* b = g_batches; b; b = b->outer)
    if (b->dev == dev && b->n != 0) finish_batch(b);
}

// The one completion of a poll threw (the exception being handled): the
// receives are re-posted as after any poll, and the error rethrown.
[[noreturn, gnu::noinline]] void refill_after_error(device_impl_t* dev)
{
  std::exception_ptr error = std::current_exception();
  if (needs_refill(dev)) refill_recvs(dev);
  std::rethrow_exception(error);
}

// A poll's completions after the one being handled threw (the exception
// being handled): the rest is handled, each once, and released; the
// receives are re-posted as after any poll, and the first error is
// rethrown. Out of line: the common poll has no error.
[[noreturn, gnu::noinline]] void finish_after_error(device_impl_t* dev,
                                                    batch_t* b)
{
  std::exception_ptr first_error = std::current_exception();
  try {
    finish_batch(b);
  } catch (...) {
  }
  g_batches = b->outer;
  if (needs_refill(dev)) refill_recvs(dev);
  std::rethrow_exception(first_error);
}

// The `n` completions of a poll, on this thread's stack of batches (see
// batch_t), then released. Out of line: the common poll of a ping-pong
// returns one completion and lends nothing (progress_step).
[[gnu::noinline]] void handle_batch(device_impl_t* dev, const net::cqe_t* cqes,
                                    size_t n)
{
  batch_t b{dev, cqes, n, 0, g_batches};
  g_batches = &b;
  try {
    for (; b.i < b.n; ++b.i) handle_cqe(dev, cqes[b.i]);
  } catch (...) {
    finish_after_error(dev, &b);
  }
  g_batches = b.outer;
  if (__builtin_expect(b.n != 0, 1)) dev->net.release(cqes, b.n);
}

// One progress step on a device: backlog, completions, receive refill.
// Returns the number of things that happened. Inline: it is the body of
// progress_device, every spinning thread's loop (each call layer and check
// on the empty path lengthens the wait for the message that ends the spin).
[[gnu::always_inline]] inline size_t progress_step(device_impl_t* dev)
{
  constexpr size_t kBatch = 16;
  // small messages may come in place, in here or in the backend's own
  // memory until the release (net.hpp, poll_comp)
  constexpr size_t kScratch = 4096;
  if (__builtin_expect(g_batches != nullptr, 0)) finish_batches(dev);
  size_t n = dev->backlog.empty() ? 0 : dev->backlog.drain();
  // the backend writes the entries it returns: left uninitialized (cqe_t's
  // member defaults would cost a store per entry and per poll)
  union cqes_t {
    cqes_t() {}
    net::cqe_t at[kBatch];
  } batch;
  net::cqe_t* cqes = batch.at;
  alignas(64) char scratch[kScratch];
  const size_t ncqes = dev->net.poll(cqes, kBatch, scratch, kScratch);
  if (ncqes > 0) {
    n += ncqes;
    if (__builtin_expect(ncqes == 1 && !dev->net.lent(), 1)) {
      // one completion, nothing lent: a step nested in its handling has
      // nothing of this batch to finish first, so no batch frame
      try {
        handle_cqe(dev, cqes[0]);
      } catch (...) {
        refill_after_error(dev);
      }
    } else {
      handle_batch(dev, cqes, ncqes);
    }
  }
  if (__builtin_expect(needs_upkeep(dev, n), 0)) return progress_upkeep(dev, n);
  return n;
}

// The same step, out of line, for the pollers other than progress_device.
[[gnu::noinline]] size_t progress_once(device_impl_t* dev)
{
  return progress_step(dev);
}

// Attentive progress: poll one other device of the runtime, chosen at
// random, whose owner may be busy. The poller count keeps free_device from
// deleting a device under us (it clears the slot, then waits for zero).
size_t progress_other(device_impl_t* self)
{
  runtime_impl_t* rt = self->runtime;
  size_t ndev = rt->devices.size_hint();
  if (ndev < 2) return 0;
  thread_local uint64_t rng =
      0x9E3779B97F4A7C15ull ^ reinterpret_cast<uintptr_t>(&rng);
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  // pairs with free_device's read-modify-write of the same counter
  rt->attentive_pollers.fetch_add(1, std::memory_order_acq_rel);
  device_impl_t* other = rt->devices.get(rng % ndev, nullptr);
  size_t n = 0;
  try {
    // (a raw device is its owner's: net_poll_cq)
    if (other && other != self && !other->raw.in_use())
      n = progress_once(other);
  } catch (...) {
    rt->attentive_pollers.fetch_sub(1, std::memory_order_release);
    throw;
  }
  rt->attentive_pollers.fetch_sub(1, std::memory_order_release);
  return n;
}

// What progress_device does every 8th call in a row that found nothing to
// do and at each yield (after idle_spins of them, util/idle.hpp): the peer
// check, then the yield if due. (At every yield too: with idle_spins below
// 8 the count restarts at each yield and never reaches 8.)
[[gnu::noinline]] void peer_check_and_yield(device_impl_t* dev, uint32_t* idle)
{
  peer_failure_poll(dev->runtime, dev);
  util::idle_yield(idle, dev->runtime->attr.idle_spins);
}

}  // namespace

error_t progress_device(device_impl_t* dev)
{
  // nonblocking node-local collectives advance in any progress call of
  // their runtime (not counted as work: a wait for a slow peer still
  // yields the core)
  coll::team_base_t* team = dev->runtime->coll_team.get();
  if (team && team->pending()) team->poll();
  size_t n = progress_step(dev);
  if (n == 0 && dev->attentive) n = progress_other(dev);
  // the rest inline and short: it is in every spinning thread's loop
  util::poll_counts_t& counts = util::g_poll_counts;
  if (n > 0) {
    counts.idle = 0;
    if (__builtin_expect((++counts.busy & 63) == 0, 0))
      peer_failure_poll(dev->runtime, dev);
    return errorcode_t::done;
  }
  if (__builtin_expect(g_am_spare == kSpareWanted, 0)) refill_am_spare();
  const uint32_t idle = ++counts.idle;
  if (__builtin_expect((idle & 7) == 0 || idle >= dev->yield_after, 0))
    peer_check_and_yield(dev, &counts.idle);
  return errorcode_t::retry;
}

const void* am_spare_of_this_thread()
{
  return g_am_spare > kSpareWanted ? reinterpret_cast<const void*>(g_am_spare)
                                   : nullptr;
}

// (here, with progress_device: the call folds into this one)
error_t progress_x::call_impl(runtime_t runtime, device_t device,
                              endpoint_t endpoint)
{
  const char* call = "progress";
  if (!endpoint.is_empty()) device = endpoint_device(endpoint, device, call);
  return progress_device(resolve_device(runtime, device, call).dev);
}

void drain_device(device_impl_t* dev)
{
  using clock = std::chrono::steady_clock;
  auto deadline = clock::now() + std::chrono::seconds(30);
  runtime_impl_t* rt = dev->runtime;
  while (dev->nsends_pending.load(std::memory_order_relaxed) > 0 ||
         dev->nops_pending.load(std::memory_order_relaxed) > 0 ||
         !dev->backlog.empty()) {
    try {
      progress_device(dev);
    } catch (const peer_failure_error&) {
      // found while freeing: nothing is left to report it to
    }
    // sends to a failed rank may never complete (shm): 1 s, then give up
    if (rt->nfailed.load(std::memory_order_relaxed) > 0 &&
        deadline > clock::now() + std::chrono::seconds(1))
      deadline = clock::now() + std::chrono::seconds(1);
    if (clock::now() > deadline) {
      if (rt->nfailed.load(std::memory_order_relaxed) > 0) return;
      LCI_LOG(warn, "free_device: ", dev->nsends_pending.load(), " sends and ",
              dev->nops_pending.load(), " transfers in flight and ",
              dev->backlog.size(),
              " in the backlog after 30 s; freeing anyway");
      return;
    }
  }
}

void progress_during(device_impl_t* dev, const std::function<void()>& wait)
{
  std::atomic<bool> stop{false};
  std::thread poller;
  auto poll = [dev, &stop] {
    while (!stop.load(std::memory_order_acquire)) {
      size_t n = 0;
      try {
        n = progress_once(dev);
        // and the runtime's other devices, which the peer may be waiting
        // on as well (their owners may be here, freeing devices in turn)
        n += progress_other(dev);
      } catch (const std::exception& e) {
        // this thread has nobody to report to: say it and stop polling
        // (a failed peer is expected here; the barrier reports it)
        if (!dynamic_cast<const peer_failure_error*>(&e))
          LCI_LOG(warn, "free_device: progress failed: ", e.what());
        return;
      }
      // nothing to do: a short sleep, not a spin (the barrier's peers may
      // need the core more than a device being freed does)
      if (n == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  };
  try {
    poller = std::thread(poll);
  } catch (const std::system_error&) {
    // no thread to be had (a resource limit): wait without polling; a
    // wait that needs this device's progress then depends on the peers
  }
  struct joiner_t {
    std::atomic<bool>& stop;
    std::thread& poller;
    ~joiner_t()
    {
      stop.store(true, std::memory_order_release);
      if (poller.joinable()) poller.join();
    }
  } joiner{stop, poller};
  wait();
}

void wait_sync(sync_impl_t* sync, device_impl_t* dev, status_t* p_out)
{
  // progress yields the core when idle (util/idle.hpp)
  while (!sync->test(p_out)) {
    if (dev)
      progress_device(dev);
    else
      util::idle_polled(64, false);
  }
}

}  // namespace lci
