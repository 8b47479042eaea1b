// Completion queues (paper 4.1.4): statuses in signal order, popped by any
// thread. Two implementations, chosen by the cq attribute `cq_type`, both
// built on the bounded ring of ring.hpp (per-slot sequence numbers; one
// atomic read-modify-write per push and per pop):
//
// array  One ring of exactly `default_length` entries. When it is full,
//        signal must neither lose the status nor wait (it runs inside
//        progress), so the status goes to an overflow ring under a lock,
//        which grows as needed. While the overflow is not empty every
//        signal goes there too (a producer's statuses stay in order), and a
//        pop takes from it only when, holding its lock, it finds the ring
//        drained (so a status never overtakes an older one of the same
//        producer still in the ring). Size the queue for the expected
//        backlog: the overflow is a correctness net, not a fast path.
// lcrq   LCRQ-style (Morrison and Afek, PPoPP 2013): a linked list of rings
//        of `default_length` entries (rounded up to a power of two); a full
//        ring is closed and a new one appended. Unbounded. The head ring is
//        unlinked once it is closed and drained; unlinked rings are
//        protected by hazard pointers (hazard.hpp) and, once no thread can
//        touch them, kept in a small pool and reopened for the next append,
//        so steady state allocates nothing.
//
// Both: signal never waits for a consumer; cq_pop returns the oldest
// status, as done (or with its error, fatal_peer_failure say, when the
// operation failed: a failure must never read as a completion), or retry
// when empty (also, briefly, when the oldest status
// is still being copied in by its producer); FIFO per producer; no
// allocation per completion. Thread safety: any-thread, any number of
// signallers and poppers.
#ifndef LCI_COMP_CQ_HPP
#define LCI_COMP_CQ_HPP

#include <atomic>
#include <vector>

#include "comp/backoff.hpp"
#include "comp/hazard.hpp"
#include "comp/ring.hpp"
#include "lci.hpp"

namespace lci
{

// A status as cq_pop returns it: done, unless the operation failed.
inline void mark_popped(status_t* s)
{
  if (!s->error.is_fatal()) s->error = errorcode_t::done;
}

class cq_impl_t : public comp_impl_t
{
 public:
  enum class kind_t { array, lcrq };
  // the oldest status (done, or its error), or retry when empty
  inline status_t pop();
  kind_t kind() const { return kind_; }

  cq_attr_t attr;

 protected:
  cq_impl_t(const cq_attr_t& a, kind_t k) : attr(a), kind_(k) {}

 private:
  kind_t kind_;
};

// ---------------------------------------------------------------------------
// array

class array_cq_t final : public cq_impl_t
{
 public:
  explicit array_cq_t(const cq_attr_t& a)
      : cq_impl_t(a, kind_t::array), ring_(a.default_length, /*closable=*/false)
  {
  }

  void signal(status_t status) override { push(status); }

  void push(const status_t& s)
  {
    if (LCI_COMP_LIKELY(ovf_count_.load(std::memory_order_acquire) == 0) &&
        LCI_COMP_LIKELY(ring_.push(s) ==
                        comp_detail::ring_t::push_result_t::pushed))
      return;
    overflow_push(s);
  }

  status_t pop_impl()
  {
    status_t s;
    if (ring_.pop(&s)) {
      mark_popped(&s);
      return s;
    }
    if (LCI_COMP_LIKELY(ovf_count_.load(std::memory_order_acquire) == 0))
      return status_t(errorcode_t::retry);
    return overflow_pop();
  }

  size_t capacity() const { return ring_.capacity(); }
  // statuses currently in the overflow (for tests)
  size_t overflow_size() const
  {
    return ovf_count_.load(std::memory_order_acquire);
  }

 private:
  void overflow_push(const status_t& s);
  status_t overflow_pop();

  comp_detail::ring_t ring_;
  alignas(64) std::atomic<size_t> ovf_count_{0};
  alignas(64) comp_detail::yield_lock_t ovf_lock_;
  std::vector<status_t> ovf_;  // a ring: ovf_head_, ovf_count_ entries
  size_t ovf_head_ = 0;
};

// ---------------------------------------------------------------------------
// lcrq

class lcrq_cq_t final : public cq_impl_t
{
  using ring_t = comp_detail::ring_t;
  using push_result_t = ring_t::push_result_t;

 public:
  explicit lcrq_cq_t(const cq_attr_t& a);
  ~lcrq_cq_t() override;

  void signal(status_t status) override { push(status); }

  void push(const status_t& s)
  {
    namespace hz = comp_detail::hazard;
    for (;;) {
      ring_t* r = hz::protect(tail_, hz::kPushSlot);
      ring_t* next = r->next.load(std::memory_order_acquire);
      if (LCI_COMP_UNLIKELY(next != nullptr)) {  // help the tail along
        tail_.compare_exchange_strong(r, next, std::memory_order_seq_cst);
        continue;
      }
      if (LCI_COMP_LIKELY(r->push(s) == push_result_t::pushed)) return;
      if (append_ring(r, s)) return;
    }
  }

  status_t pop_impl()
  {
    namespace hz = comp_detail::hazard;
    status_t s;
    for (;;) {
      ring_t* r = hz::protect(head_, hz::kPopSlot);
      if (LCI_COMP_LIKELY(r->pop(&s))) {
        mark_popped(&s);
        return s;
      }
      ring_t* next = r->next.load(std::memory_order_acquire);
      if (LCI_COMP_LIKELY(next == nullptr)) return status_t(errorcode_t::retry);
      // r is closed: one last look, then move the head past it once no
      // push into it is still in flight
      if (r->pop(&s)) {
        mark_popped(&s);
        return s;
      }
      if (!r->drained()) return status_t(errorcode_t::retry);
      advance_head(r, next);
    }
  }

  // rings allocated so far, and rings waiting in the pool (for tests)
  size_t rings_allocated() const
  {
    return allocated_.load(std::memory_order_relaxed);
  }

 private:
  // r is closed: link a ring holding s after it; false if another thread
  // linked one first (then s was not pushed).
  bool append_ring(ring_t* r, const status_t& s);
  void advance_head(ring_t* r, ring_t* next);
  ring_t* get_ring();
  void reclaim_locked();

  static constexpr size_t kMaxPool = 4;

  alignas(64) std::atomic<ring_t*> head_;
  alignas(64) std::atomic<ring_t*> tail_;
  alignas(64) comp_detail::yield_lock_t pool_lock_;
  std::vector<ring_t*> pool_;     // reusable rings
  std::vector<ring_t*> retired_;  // unlinked, maybe still in use
  std::atomic<size_t> allocated_{0};
  size_t ring_length_;
};

status_t cq_impl_t::pop()
{
  if (kind_ == kind_t::array) return static_cast<array_cq_t*>(this)->pop_impl();
  return static_cast<lcrq_cq_t*>(this)->pop_impl();
}

// Allocates the queue named by attr.cq_type; throws on a bad attribute.
cq_impl_t* make_cq(const cq_attr_t& attr);

}  // namespace lci

#endif  // LCI_COMP_CQ_HPP
