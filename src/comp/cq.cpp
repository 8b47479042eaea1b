// Slow paths of the completion queues: the array queue's overflow, the LCRQ
// ring list (append, retire, reuse). See cq.hpp.
#include "comp/cq.hpp"

#include <algorithm>

#include "util/error.hpp"

namespace lci
{

// ---------------------------------------------------------------------------
// array: overflow

void array_cq_t::overflow_push(const status_t& s)
{
  comp_detail::yield_guard_t g(ovf_lock_);
  size_t n = ovf_count_.load(std::memory_order_relaxed);
  if (n == ovf_.size()) {  // grow (rare: only while the ring is full)
    std::vector<status_t> bigger(ovf_.empty() ? 64 : 2 * ovf_.size());
    for (size_t i = 0; i < n; ++i)
      bigger[i] = ovf_[(ovf_head_ + i) % ovf_.size()];
    ovf_.swap(bigger);
    ovf_head_ = 0;
  }
  ovf_[(ovf_head_ + n) % ovf_.size()] = s;
  ovf_count_.store(n + 1, std::memory_order_release);
}

status_t array_cq_t::overflow_pop()
{
  comp_detail::yield_guard_t g(ovf_lock_);
  // Only statuses pushed before we took the lock are in the overflow; the
  // ring must be drained now (nothing in it, no push into it in flight), or
  // an older status of the same producer could still be in it.
  status_t s;
  if (ring_.pop(&s)) {
    mark_popped(&s);
    return s;
  }
  if (!ring_.drained()) return status_t(errorcode_t::retry);
  size_t n = ovf_count_.load(std::memory_order_relaxed);
  if (n == 0) return status_t(errorcode_t::retry);
  s = ovf_[ovf_head_];
  ovf_head_ = (ovf_head_ + 1) % ovf_.size();
  ovf_count_.store(n - 1, std::memory_order_release);
  mark_popped(&s);
  return s;
}

// ---------------------------------------------------------------------------
// lcrq: the ring list

lcrq_cq_t::lcrq_cq_t(const cq_attr_t& a)
    : cq_impl_t(a, kind_t::lcrq),
      ring_length_(comp_detail::round_up_pow2(a.default_length))
{
  ring_t* r = new ring_t(ring_length_, /*closable=*/true);
  allocated_.store(1, std::memory_order_relaxed);
  head_.store(r, std::memory_order_relaxed);
  tail_.store(r, std::memory_order_relaxed);
  pool_.reserve(kMaxPool);
}

lcrq_cq_t::~lcrq_cq_t()
{
  // no other thread may use the queue now; stale hazards only name addresses
  for (ring_t* r = head_.load(std::memory_order_acquire); r;) {
    ring_t* next = r->next.load(std::memory_order_acquire);
    delete r;
    r = next;
  }
  for (ring_t* r : pool_) delete r;
  for (ring_t* r : retired_) delete r;
}

lcrq_cq_t::ring_t* lcrq_cq_t::get_ring()
{
  {
    comp_detail::yield_guard_t g(pool_lock_);
    if (pool_.empty() && !retired_.empty()) reclaim_locked();
    if (!pool_.empty()) {
      ring_t* r = pool_.back();
      pool_.pop_back();
      return r;
    }
  }
  allocated_.fetch_add(1, std::memory_order_relaxed);
  return new ring_t(ring_length_, /*closable=*/true);
}

bool lcrq_cq_t::append_ring(ring_t* r, const status_t& s)
{
  ring_t* fresh = get_ring();
  fresh->reopen_with(s);
  ring_t* expected = nullptr;
  if (r->next.compare_exchange_strong(expected, fresh,
                                      std::memory_order_seq_cst)) {
    tail_.compare_exchange_strong(r, fresh, std::memory_order_seq_cst);
    return true;
  }
  // another producer appended first; nobody saw `fresh`
  {
    comp_detail::yield_guard_t g(pool_lock_);
    if (pool_.size() < kMaxPool) {
      pool_.push_back(fresh);
      return false;
    }
  }
  delete fresh;
  return false;
}

void lcrq_cq_t::advance_head(ring_t* r, ring_t* next)
{
  // The tail must never name an unlinked ring: move it first.
  ring_t* t = r;
  tail_.compare_exchange_strong(t, next, std::memory_order_seq_cst);
  ring_t* h = r;
  if (!head_.compare_exchange_strong(h, next, std::memory_order_seq_cst))
    return;  // another consumer did it
  comp_detail::yield_guard_t g(pool_lock_);
  retired_.push_back(r);
  reclaim_locked();
}

// Moves the retired rings no hazard names to the pool (or frees them).
// The unlinking CAS and the hazard loads are seq_cst (no fence needed).
void lcrq_cq_t::reclaim_locked()
{
  size_t kept = 0;
  for (size_t i = 0; i < retired_.size(); ++i) {
    ring_t* r = retired_[i];
    if (comp_detail::hazard::is_protected(r)) {
      retired_[kept++] = r;
    } else if (pool_.size() < kMaxPool) {
      pool_.push_back(r);
    } else {
      delete r;
      allocated_.fetch_sub(1, std::memory_order_relaxed);
    }
  }
  retired_.resize(kept);
}

// ---------------------------------------------------------------------------

cq_impl_t* make_cq(const cq_attr_t& attr)
{
  if (attr.default_length < 1)
    util::throw_fatal("alloc_cq: default_length ", attr.default_length,
                      " must be at least 1");
  if (attr.default_length > (size_t(1) << 30))
    util::throw_fatal("alloc_cq: default_length ", attr.default_length,
                      " is larger than 2^30");
  detail::check_cq_enums(attr, "alloc_cq");
  if (attr.cq_type == attr_cq_type_t::array_atomic) return new array_cq_t(attr);
  return new lcrq_cq_t(attr);
}

}  // namespace lci
