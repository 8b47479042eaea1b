#include <cstring>

#include "net/shm/device.hpp"

namespace lci::net::shm
{

error_t shm_device_t::post_recv(void*, size_t, void*)
{
  util::throw_fatal(
      "native shm backend: post_recv called, but messages are handed over in "
      "place (needs_recvs is false)");
}

size_t shm_device_t::poll_comp(cqe_t* out, size_t max, char*, size_t)
{
  if (!lock_.try_lock()) return 0;
  size_t n = 0;
  try {
    if (local_.any()) n = local_.take(out, max);
    if (nnetwork_.load(std::memory_order_relaxed) > 0) check_network();
    if (jobs_.any()) jobs_.run();
    if (!unlinked_) try_unlink();
    n += drain(out + n, max - n);
  } catch (...) {
    // (a corrupt ring: what was lent so far is dropped with the error)
    publish_lent();
    lock_.unlock();
    throw;
  }
  if (nlent_ != 0) {
    // the core reads the lent messages until its release: the lock stays
    // with this poll until then
    lent_at_.store(out, std::memory_order_relaxed);
    return n;
  }
  lock_.unlock();
  return n;
}

size_t shm_device_t::drain(cqe_t* out, size_t max)
{
  size_t n = 0;
  const size_t nwords = lay_.nwords;
  for (size_t w = 0; w < nwords; ++w) {
    uint64_t* bell = bell_word(w);
    // bits rung since the last poll: those rings become hot (their bits
    // stay set, so their senders skip the read-modify-write)
    uint64_t hot = hot_[w] | __atomic_load_n(bell, __ATOMIC_RELAXED);
    uint64_t bits = hot | pending_[w];
    uint64_t pending = 0;
    uint64_t cool = 0;  // hot rings idle for idle_polls_ polls
    while (bits) {
      int b = __builtin_ctzll(bits);
      bits &= bits - 1;
      const uint64_t bit = uint64_t(1) << b;
      int r = static_cast<int>(w * 64) + b;
      if (n >= max) {
        if (!(hot & bit)) pending |= bit;
        continue;
      }
      size_t before = n;
      bool empty = drain_ring(r, out, max, &n);
      if (!(hot & bit)) {
        if (!empty) pending |= bit;
        continue;
      }
      if (n > before || !empty) {
        idle_[r] = 0;
      } else if (++idle_[r] >= idle_polls_) {
        idle_[r] = 0;
        cool |= bit;
      }
    }
    if (cool) {
      // cool down: clear the bits (one system call for all of them when
      // heavy), then look once more (doorbell.hpp); if the membarrier
      // fails, the rings stay hot and no ring cools down any more
      if (!doorbell_cool(bell, cool, cfg_.membarrier)) {
        idle_polls_ = UINT32_MAX;
        cool = 0;
      }
      hot &= ~cool;
      for (uint64_t c = cool; c; c &= c - 1) {
        int r = static_cast<int>(w * 64) + __builtin_ctzll(c);
        ring_consumer_t::msg_t m;
        if (rx_[r].peek(&m)) pending |= c & -c;
      }
    }
    hot_[w] = hot;
    pending_[w] = pending;
  }
  return n;
}

bool shm_device_t::drain_ring(int r, cqe_t* out, size_t max, size_t* pn)
{
  ring_consumer_t c = rx_[r];
  size_t n = *pn;
  bool empty = false;
  for (int budget = 64; budget > 0 && n < max; --budget) {
    ring_consumer_t::msg_t m;
    if (!c.peek(&m)) {
      empty = true;
      break;
    }
    if (__builtin_expect(m.type == kMsg, 1)) {
      // lent in place: the core reads it in the ring until release()
      out[n++] =
          cqe_t{cqe_t::kind_t::message, const_cast<unsigned char*>(m.payload),
                m.length, 0, nullptr};
      c.take(m);
      continue;
    }
    handle_other(r, m, out, &n);
    c.pop(m);
  }
  if (c.lent())
    lent_[nlent_++] = r;
  else
    c.publish();
  rx_[r] = c;
  *pn = n;
  return empty;
}

void shm_device_t::handle_other(int r, ring_consumer_t::msg_t m, cqe_t* out,
                                size_t* n)
{
  switch (m.type) {
    case kImm: {
      uint64_t imm;
      std::memcpy(&imm, m.payload, sizeof(imm));
      out[(*n)++] =
          cqe_t{cqe_t::kind_t::remote_write, nullptr, 0, imm, nullptr};
      return;
    }
    case kWriteData:
    case kReadData: {
      chunk_hdr_t h;
      std::memcpy(&h, m.payload, sizeof(h));
      size_t len = m.length - sizeof(h);
      if (len)
        std::memcpy(reinterpret_cast<void*>(h.addr), m.payload + sizeof(h),
                    len);
      if (!(h.flags & kLast)) return;
      if (m.type == kReadData) {
        out[(*n)++] = cqe_t{cqe_t::kind_t::read, reinterpret_cast<void*>(h.ctx),
                            0, 0, nullptr};
        return;
      }
      if (h.flags & kHasImm)
        out[(*n)++] =
            cqe_t{cqe_t::kind_t::remote_write, nullptr, 0, h.imm, nullptr};
      jobs_.add(tx_job_t{r, kWriteAck, nullptr, 1, 0, h.ctx, 0, false});
      return;
    }
    case kWriteAck: {
      uint64_t ctx;
      std::memcpy(&ctx, m.payload, sizeof(ctx));
      out[(*n)++] = cqe_t{cqe_t::kind_t::write, reinterpret_cast<void*>(ctx), 0,
                          0, nullptr};
      return;
    }
    case kReadReq: {
      read_req_t q;
      std::memcpy(&q, m.payload, sizeof(q));
      jobs_.add(tx_job_t{r, kReadData, reinterpret_cast<const char*>(q.raddr),
                         q.size, q.laddr, q.ctx, 0, false});
      return;
    }
    default:
      util::throw_fatal("native shm backend: unknown message type ", m.type,
                        " from rank ", r, " (corrupted ring)");
  }
}

}  // namespace lci::net::shm
