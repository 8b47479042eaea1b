// Completion queue: statuses in signal order, popped by any thread.
// This version is a growable ring buffer under a spinlock (no allocation per
// completion once it has grown to the working size); the lock-free
// fetch-and-add and LCRQ queues of the paper plug in behind the same calls.
// Thread safety: any-thread.
#ifndef LCI_COMP_CQ_HPP
#define LCI_COMP_CQ_HPP

#include <vector>

#include "lci.hpp"
#include "util/spinlock.hpp"

namespace lci
{

class cq_impl_t final : public comp_impl_t
{
 public:
  explicit cq_impl_t(const cq_attr_t& a)
      : attr(a), ring_(a.default_length < 2 ? 2 : a.default_length)
  {
  }

  void signal(status_t status) override
  {
    util::spin_guard_t g(lock_);
    if (count_ == ring_.size()) grow_locked();
    ring_[(head_ + count_) % ring_.size()] = status;
    ++count_;
  }

  // done with the oldest status, or retry when empty
  status_t pop()
  {
    util::spin_guard_t g(lock_);
    if (count_ == 0) return status_t(errorcode_t::retry);
    status_t s = ring_[head_];
    head_ = (head_ + 1) % ring_.size();
    --count_;
    s.error = errorcode_t::done;
    return s;
  }

  cq_attr_t attr;

 private:
  void grow_locked()
  {
    std::vector<status_t> bigger(ring_.size() * 2);
    for (size_t i = 0; i < count_; ++i)
      bigger[i] = ring_[(head_ + i) % ring_.size()];
    ring_.swap(bigger);
    head_ = 0;
  }

  util::spinlock_t lock_;
  std::vector<status_t> ring_;
  size_t head_ = 0;
  size_t count_ = 0;
};

}  // namespace lci

#endif  // LCI_COMP_CQ_HPP
