// The bounded ring under both completion queues: an array of slots with a
// sequence number per slot (after D. Vyukov's bounded MPMC queue), plus
// closing for LCRQ-style lists of rings.
//
// R = a power of two >= capacity slots, one cache line each (the sequence
// number and a 40-byte status_t). Tickets: tail_ (producers) and head_
// (consumers) count up forever; ticket t uses slot t mod R. A slot's
// sequence number says whose turn it is:
//   seq == t       free for the producer of ticket t;
//   seq == t + 1   holds the item of ticket t, for the consumer of t;
//   seq == t + R   the consumer of t is done: free for the producer of t + R.
//
// push: t = tail; if slot t has seq == t, claim t with one CAS on the tail,
//   copy the status in, store seq = t + 1 (release). If seq < t the slot still
//   holds the item of ticket t - R (the ring is full): report full, or, for a
//   closable ring, close it (a bit of the tail; no push succeeds afterwards)
//   and report closed. Never waits.
// pop: h = head; if slot h has seq == h + 1, claim h with one CAS on the
//   head, copy the status out, store seq = h + R (release). If seq < h + 1
//   there is nothing to take yet: report empty. Never waits.
//
// One atomic read-modify-write per push and per pop (a CAS that fails only
// when another thread's push or pop succeeded: lock-free), and the release
// and acquire on the slot's sequence number. Why not a fetch-and-add ticket
// with a second read-modify-write on the slot (CRQ)? A locked instruction
// is the dominant cost of a push or pop, and the CRQ protocol needs two per
// side; with a CAS a consumer only claims published slots, so there is
// nothing to arbitrate and one per side suffices (docs/PERFORMANCE_LOG.md).
//
// "Empty" may also mean that the oldest ticket is claimed by a producer that
// has not published yet (between its CAS and its store): pop reports empty
// instead of waiting for it; drained() tells the two apart.
//
// Items are never lost or duplicated (a ticket is claimed once on each side);
// FIFO per producer (a producer's tickets increase; consumers take tickets
// in order). Thread safety: any-thread, any number of producers and
// consumers. reopen_with only while no other thread can reach the ring.
#ifndef LCI_COMP_RING_HPP
#define LCI_COMP_RING_HPP

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "lci.hpp"

namespace lci::comp_detail
{

#define LCI_COMP_LIKELY(x) __builtin_expect(!!(x), 1)
#define LCI_COMP_UNLIKELY(x) __builtin_expect(!!(x), 0)

inline size_t round_up_pow2(size_t n)
{
  size_t p = 2;
  while (p < n) p <<= 1;
  return p;
}

class ring_t
{
 public:
  enum class push_result_t { pushed, full, closed };

  // At most `capacity` items in round_up_pow2(capacity) slots. A closable
  // ring closes when full instead of reporting full.
  ring_t(size_t capacity, bool closable)
      : nslots_(round_up_pow2(capacity)),
        mask_(nslots_ - 1),
        capacity_(capacity < 1 ? 1 : capacity),
        closable_(closable),
        slots_(new slot_t[nslots_])
  {
    for (size_t i = 0; i < nslots_; ++i)
      slots_[i].seq.store(i, std::memory_order_relaxed);
  }
  ring_t(const ring_t&) = delete;
  ring_t& operator=(const ring_t&) = delete;

  size_t nslots() const { return nslots_; }
  size_t capacity() const { return capacity_; }

  push_result_t push(const status_t& x)
  {
    uint64_t t = tail_.load(std::memory_order_relaxed);
    slot_t* s;
    for (;;) {
      if (closable_ && LCI_COMP_UNLIKELY(t & kClosed))
        return push_result_t::closed;
      s = &slots_[t & mask_];
      uint64_t seq = s->seq.load(std::memory_order_acquire);
      int64_t dif = static_cast<int64_t>(seq - t);
      if (LCI_COMP_LIKELY(dif == 0)) {
        // an exact capacity below the slot count is checked on the tickets
        if (capacity_ != nslots_ &&
            t - head_.load(std::memory_order_acquire) >= capacity_)
          return full();
        if (LCI_COMP_LIKELY(
                tail_.compare_exchange_weak(t, t + 1, std::memory_order_relaxed,
                                            std::memory_order_relaxed)))
          break;
      } else if (dif < 0) {
        return full();  // slot t still holds the item of ticket t - R
      } else {
        t = tail_.load(std::memory_order_relaxed);  // t was taken
      }
    }
    s->data = x;
    s->seq.store(t + 1, std::memory_order_release);
    return push_result_t::pushed;
  }

  // true with the oldest item in *out, or false when there is none (yet).
  bool pop(status_t* out)
  {
    uint64_t h = head_.load(std::memory_order_relaxed);
    slot_t* s;
    for (;;) {
      s = &slots_[h & mask_];
      uint64_t seq = s->seq.load(std::memory_order_acquire);
      int64_t dif = static_cast<int64_t>(seq - (h + 1));
      if (LCI_COMP_LIKELY(dif == 0)) {
        if (LCI_COMP_LIKELY(
                head_.compare_exchange_weak(h, h + 1, std::memory_order_relaxed,
                                            std::memory_order_relaxed)))
          break;
      } else if (dif < 0) {
        return false;  // not published (yet)
      } else {
        h = head_.load(std::memory_order_relaxed);  // h was taken
      }
    }
    *out = s->data;
    s->seq.store(h + nslots_, std::memory_order_release);
    return true;
  }

  // Every claimed ticket has been claimed by a consumer too: nothing is in
  // the ring or being pushed into it. Once a ring is closed, this stays true.
  bool drained() const
  {
    uint64_t h = head_.load(std::memory_order_acquire);
    return h == (tail_.load(std::memory_order_acquire) & ~kClosed);
  }

  // Reopens a closed, drained ring (or a fresh one) holding x only. A
  // drained ring's sequence numbers already expect the tickets from the
  // head on, so only the tail's closed bit and one slot change. Published
  // to other threads by the release that links the ring.
  void reopen_with(const status_t& x)
  {
    uint64_t m = head_.load(std::memory_order_relaxed);
    slot_t& s = slots_[m & mask_];
    s.data = x;
    s.seq.store(m + 1, std::memory_order_relaxed);
    tail_.store(m + 1, std::memory_order_relaxed);
    next.store(nullptr, std::memory_order_relaxed);
  }

  std::atomic<ring_t*> next{nullptr};  // the LCRQ list link

 private:
  static constexpr uint64_t kClosed = uint64_t(1) << 63;

  push_result_t full()
  {
    if (!closable_) return push_result_t::full;
    tail_.fetch_or(kClosed, std::memory_order_acq_rel);
    return push_result_t::closed;
  }

  struct alignas(64) slot_t {
    std::atomic<uint64_t> seq;
    status_t data;
  };

  alignas(64) std::atomic<uint64_t> head_{0};
  alignas(64) std::atomic<uint64_t> tail_{0};
  alignas(64) const size_t nslots_;
  const size_t mask_;
  const size_t capacity_;
  const bool closable_;
  std::unique_ptr<slot_t[]> slots_;
};

}  // namespace lci::comp_detail

#endif  // LCI_COMP_RING_HPP
