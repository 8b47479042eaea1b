#include <cstring>

#include "net/shm/device.hpp"
#include "util/copy.hpp"

namespace lci::net::shm
{

error_t shm_device_t::post_recv(void* buf, size_t size, void* ctx)
{
  util::spin_guard_t g(recv_lock_);
  recvs_.push_back(posted_recv_t{buf, size, ctx});
  return errorcode_t::posted;
}

bool shm_device_t::pop_recv(posted_recv_t* rv)
{
  util::spin_guard_t g(recv_lock_);
  if (recvs_.empty()) return false;
  *rv = recvs_.front();
  recvs_.pop_front();
  return true;
}

size_t shm_device_t::poll_comp(cqe_t* out, size_t max, char* scratch,
                               size_t scratch_size)
{
  if (quiet()) {
    // A spinning wait of quiet polls has no locked instruction (a locked
    // poll's try_lock orders its loads), so the core would speculate many
    // polls ahead; the message's store would then invalidate loads of the
    // slot already executed, and the core discard them all (a memory-order
    // clear) before it sees the message. The pause keeps the polls in
    // order.
    util::cpu_relax();
    return 0;
  }
  return poll_locked(out, max, scratch, scratch_size);
}

size_t shm_device_t::poll_locked(cqe_t* out, size_t max, char* scratch,
                                 size_t scratch_size)
{
  if (!lock_.try_lock()) return 0;
  if (watch_ring_ >= 0) {
    // the quiet polls since the last locked one found the ring empty
    const uint32_t left = quiet_left_.load(std::memory_order_relaxed);
    if (left < quiet_budget_) idle_[watch_ring_] += quiet_budget_ - left;
    watch_ring_ = -1;
  }
  scratch_ = scratch;
  scratch_left_ = scratch ? scratch_size : 0;
  size_t n = 0;
  try {
    if (local_.any()) n = local_.take(out, max);
    if (nnetwork_.load(std::memory_order_relaxed) > 0) check_network();
    if (jobs_.any()) jobs_.run();
    if (!unlinked_) try_unlink();
    n += drain(out + n, max - n);
  } catch (...) {
    // (a corrupt ring: what was lent so far is dropped with the error)
    watch_.store(nullptr, std::memory_order_relaxed);
    publish_lent();
    lock_.unlock();
    throw;
  }
  if (nlent_ != 0) {
    // the core reads the lent messages until its release: the lock stays
    // with this poll until then
    lent_at_.store(out, std::memory_order_relaxed);
    watch_.store(nullptr, std::memory_order_relaxed);
    return n;
  }
  // a poll that found something is followed by more work (the caller's
  // reply, the next message): the next poll is a locked one, and arms
  if (n == 0)
    arm_quiet();
  else
    watch_.store(nullptr, std::memory_order_relaxed);
  lock_.unlock();
  return n;
}

void shm_device_t::arm_quiet()
{
  // (the local completions, delivery checks and fallback transfers are
  // checked by every quiet poll)
  const uint64_t hot = hot_[0];
  if (!quiet_ok_ || pending_[0] || (hot & (hot - 1))) {
    watch_.store(nullptr, std::memory_order_relaxed);
    return;
  }
  const uint64_t* word = &kQuietWord;
  uint32_t budget = idle_polls_;  // no ring to cool down
  const char* next = nullptr;
  if (hot) {
    const int r = __builtin_ctzll(hot);
    // the empty polls left before the ring cools down; the last one is a
    // locked poll, which cools it
    if (idle_[r] + 1 >= idle_polls_) {
      watch_.store(nullptr, std::memory_order_relaxed);
      return;
    }
    budget = idle_polls_ - idle_[r] - 1;
    word = rx_[r].head_word();
    watch_ring_ = r;
    if (rx_[r].last_slots() <= kOwnMin)
      next = reinterpret_cast<const char*>(
          (reinterpret_cast<uintptr_t>(word) | 63) + 1);
  }
  watch_next_.store(next, std::memory_order_relaxed);
  quiet_budget_ = budget;
  quiet_left_.store(budget, std::memory_order_relaxed);
  watch_bits_.store(hot, std::memory_order_relaxed);
  watch_.store(word, std::memory_order_release);
}

size_t shm_device_t::drain(cqe_t* out, size_t max)
{
  size_t n = 0;
  const size_t nwords = lay_.nwords;
  for (size_t w = 0; w < nwords; ++w) {
    // bits rung since the last poll: those rings become hot (their bits
    // stay set, so their senders skip the read-modify-write)
    const uint64_t hot =
        hot_[w] | __atomic_load_n(bell_word(w), __ATOMIC_RELAXED);
    uint64_t bits = hot | pending_[w];
    if (!bits) continue;
    uint64_t pending = 0;
    uint64_t cool = 0;  // hot rings idle for idle_polls_ polls
    do {
      const int b = __builtin_ctzll(bits);
      bits &= bits - 1;
      const uint64_t bit = uint64_t(1) << b;
      const int r = static_cast<int>(w * 64) + b;
      if (n >= max) {
        pending |= bit & ~hot;
        continue;
      }
      const drained_t d = drain_ring(r, out, max, n);
      if (!(hot & bit)) {
        if (!d.empty) pending |= bit;
      } else if (d.n > n || !d.empty) {
        idle_[r] = 0;
      } else if (++idle_[r] >= idle_polls_) {
        idle_[r] = 0;
        cool |= bit;
      }
      n = d.n;
    } while (bits);
    hot_[w] = cool ? cool_down(w, hot, cool, &pending) : hot;
    pending_[w] = pending;
  }
  return n;
}

uint64_t shm_device_t::cool_down(size_t w, uint64_t hot, uint64_t cool,
                                 uint64_t* pending)
{
  // clear the bits (one system call for all of them when heavy), then look
  // once more (doorbell.hpp); if the membarrier fails, the rings stay hot
  // and no ring cools down any more
  if (!doorbell_cool(bell_word(w), cool, cfg_.membarrier)) {
    idle_polls_ = UINT32_MAX;
    return hot;
  }
  for (uint64_t c = cool; c; c &= c - 1) {
    int r = static_cast<int>(w * 64) + __builtin_ctzll(c);
    ring_consumer_t::msg_t m;
    if (rx_[r].peek(&m)) *pending |= c & -c;
  }
  return hot & ~cool;
}

shm_device_t::drained_t shm_device_t::drain_ring(int r, cqe_t* out, size_t max,
                                                 size_t n)
{
  ring_consumer_t c = rx_[r];
  char* scratch = scratch_;
  size_t left = scratch_left_;
  bool empty = false;
  for (int budget = 64; budget > 0 && n < max; --budget) {
    ring_consumer_t::msg_t m;
    if (!c.peek(&m)) {
      empty = true;
      break;
    }
    constexpr size_t kInSlot = kSlot - kRingHeader;
    if (__builtin_expect(
            m.type == kMsg && m.length <= kInSlot && left >= kInSlot, 1)) {
      // one slot: copied out as a fixed 24 bytes (the slot has them, and
      // so has the scratch; the copy past the length is never read), and
      // the slot consumed at once, so no loan holds the device
      std::memcpy(scratch, m.payload, kInSlot);
      out[n++] = cqe_t{cqe_t::kind_t::message, scratch, m.length, 0, nullptr};
      scratch += kSlot;
      left -= kSlot;
      c.pop(m);
      continue;
    }
    if (m.type == kMsg && m.length <= kCopyMax && left >= kCopyMax) {
      // a few slots: copied here (up to four slots with a few fixed moves,
      // no call), consumed at once, as above
      if (m.length <= util::kMediumCopy)
        util::copy_medium(reinterpret_cast<unsigned char*>(scratch), m.payload,
                          m.length);
      else
        std::memcpy(scratch, m.payload, m.length);
      out[n++] = cqe_t{cqe_t::kind_t::message, scratch, m.length, 0, nullptr};
      const size_t room = (m.length + 15) & ~size_t(15);
      scratch += room;
      left -= room;
      c.pop(m);
      continue;
    }
    rx_[r] = c;
    scratch_ = scratch;
    scratch_left_ = left;
    const bool ok = handle_other(r, m, out, &n);
    c = rx_[r];
    scratch = scratch_;
    left = scratch_left_;
    if (!ok) break;  // a raw poll with no receive posted
  }
  if (c.lent())
    lent_[nlent_++] = r;
  else
    c.publish();
  rx_[r] = c;
  scratch_ = scratch;
  scratch_left_ = left;
  return drained_t{n, empty};
}

bool shm_device_t::handle_other(int r, ring_consumer_t::msg_t m, cqe_t* out,
                                size_t* n)
{
  ring_consumer_t& c = rx_[r];
  switch (m.type) {
    case kMsg: {
      const size_t room = (m.length + 15) & ~size_t(15);
      if (scratch_ && m.length <= kCopyMax && room <= scratch_left_) {
        // small enough that the copy costs less than the loan and its
        // release: into the scratch, consumed at once
        std::memcpy(scratch_, m.payload, m.length);
        out[(*n)++] =
            cqe_t{cqe_t::kind_t::message, scratch_, m.length, 0, nullptr};
        scratch_ += room;
        scratch_left_ -= room;
        break;
      }
      if (scratch_) {
        // lent in place: the core reads it in the ring until release()
        out[(*n)++] =
            cqe_t{cqe_t::kind_t::message, const_cast<unsigned char*>(m.payload),
                  m.length, 0, nullptr};
        c.take(m);
        return true;
      }
      // a raw poll: into the oldest posted receive, else it waits
      posted_recv_t rv;
      if (!pop_recv(&rv)) return false;
      const char* err = nullptr;
      size_t len = m.length;
      if (len > rv.size) {
        err = "message larger than the receive buffer";
        len = rv.size;
      }
      util::copy_bytes(rv.buf, m.payload, len);
      cqe_t e{cqe_t::kind_t::recv, rv.ctx, len, 0, err};
      e.rank = r;  // the sender: its ring's index
      out[(*n)++] = e;
      break;
    }
    case kImm: {
      uint64_t imm;
      std::memcpy(&imm, m.payload, sizeof(imm));
      out[(*n)++] =
          cqe_t{cqe_t::kind_t::remote_write, nullptr, 0, imm, nullptr};
      break;
    }
    case kWriteData:
    case kReadData: {
      chunk_hdr_t h;
      std::memcpy(&h, m.payload, sizeof(h));
      size_t len = m.length - sizeof(h);
      if (len)
        std::memcpy(reinterpret_cast<void*>(h.addr), m.payload + sizeof(h),
                    len);
      if (!(h.flags & kLast)) break;
      if (m.type == kReadData) {
        out[(*n)++] = cqe_t{cqe_t::kind_t::read, reinterpret_cast<void*>(h.ctx),
                            0, 0, nullptr};
        break;
      }
      if (h.flags & kHasImm)
        out[(*n)++] =
            cqe_t{cqe_t::kind_t::remote_write, nullptr, 0, h.imm, nullptr};
      jobs_.add(tx_job_t{r, kWriteAck, nullptr, 1, 0, h.ctx, 0, false});
      break;
    }
    case kWriteAck: {
      uint64_t ctx;
      std::memcpy(&ctx, m.payload, sizeof(ctx));
      out[(*n)++] = cqe_t{cqe_t::kind_t::write, reinterpret_cast<void*>(ctx), 0,
                          0, nullptr};
      break;
    }
    case kReadReq: {
      read_req_t q;
      std::memcpy(&q, m.payload, sizeof(q));
      jobs_.add(tx_job_t{r, kReadData, reinterpret_cast<const char*>(q.raddr),
                         q.size, q.laddr, q.ctx, 0, false});
      break;
    }
    default:
      util::throw_fatal("native shm backend: unknown message type ", m.type,
                        " from rank ", r, " (corrupted ring)");
  }
  c.pop(m);
  return true;
}

}  // namespace lci::net::shm
