// Backlog queue (paper 4.1.5): operations that could not be posted and may
// not be handed back to the user as retry (allow_retry(false), or steps of
// the progress engine itself). Progress retries them in order before
// polling; an atomic "non-empty" flag makes that free when there is nothing
// queued. Rare path: a spinlocked std::deque of closures.
// Thread safety: any-thread.
#ifndef LCI_RESOURCE_BACKLOG_QUEUE_HPP
#define LCI_RESOURCE_BACKLOG_QUEUE_HPP

#include <atomic>
#include <deque>
#include <functional>

#include "lci.hpp"
#include "util/spinlock.hpp"

namespace lci
{

class backlog_queue_t
{
 public:
  // An operation: returns a retry code to stay queued, anything else when
  // it went through (it then signals whatever it must itself).
  using op_t = std::function<error_t()>;

  bool empty() const { return !nonempty_.load(std::memory_order_acquire); }

  void push(op_t op)
  {
    util::spin_guard_t g(lock_);
    ops_.push_back(std::move(op));
    nonempty_.store(true, std::memory_order_release);
  }

  // Retries queued operations in order until one asks to wait. Returns the
  // number that went through. One thread at a time drains (try-lock on a
  // separate lock); the others skip.
  size_t drain()
  {
    if (empty() || !drain_lock_.try_lock()) return 0;
    size_t n = 0;
    bool nopacket = false;
    for (;;) {
      op_t op;
      {
        util::spin_guard_t g(lock_);
        if (ops_.empty()) {
          nonempty_.store(false, std::memory_order_release);
          break;
        }
        op = std::move(ops_.front());
        ops_.pop_front();
      }
      error_t e;
      try {
        e = op();
      } catch (...) {
        drain_lock_.unlock();
        throw;
      }
      if (e.is_retry()) {
        util::spin_guard_t g(lock_);
        ops_.push_front(std::move(op));
        nopacket = e.errorcode == errorcode_t::retry_nopacket;
        break;
      }
      ++n;
    }
    if (nopacket != waiting_for_packet_.load(std::memory_order_relaxed))
      waiting_for_packet_.store(nopacket, std::memory_order_relaxed);
    drain_lock_.unlock();
    return n;
  }

  // The last drain stopped at an entry that found its packet pool empty
  // (retry_nopacket): progress may then free packets held by unexpected
  // messages (progress.cpp release_held_packets).
  bool waiting_for_packet() const
  {
    return waiting_for_packet_.load(std::memory_order_relaxed);
  }

  size_t size()
  {
    util::spin_guard_t g(lock_);
    return ops_.size();
  }

 private:
  std::atomic<bool> nonempty_{false};
  std::atomic<bool> waiting_for_packet_{false};
  util::spinlock_t lock_;
  util::spinlock_t drain_lock_;
  std::deque<op_t> ops_;
};

}  // namespace lci

#endif  // LCI_RESOURCE_BACKLOG_QUEUE_HPP
