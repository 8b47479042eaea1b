// Small helpers of the completion objects: a spin-then-yield backoff for the
// rare waits, and a lock built on it for slow paths (queue overflow, ring
// pools). Thread safety: any-thread.
#ifndef LCI_COMP_BACKOFF_HPP
#define LCI_COMP_BACKOFF_HPP

#include <atomic>
#include <thread>

#include "util/spinlock.hpp"

namespace lci::comp_detail
{

// Spins with `pause` a few times, then yields the core: the waits in the
// queues are for another thread between two of its instructions, which may
// have been descheduled (more threads than cores).
class backoff_t
{
 public:
  void pause()
  {
    if (n_ < kSpins) {
      ++n_;
      util::cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }
  int count() const { return n_; }

 private:
  static constexpr int kSpins = 128;
  int n_ = 0;
};

// Test-and-test-and-set lock that yields when it has spun long enough; only
// for slow paths.
class yield_lock_t
{
 public:
  bool try_lock()
  {
    return !flag_.load(std::memory_order_relaxed) &&
           !flag_.exchange(true, std::memory_order_acquire);
  }
  void lock()
  {
    backoff_t b;
    while (!try_lock()) b.pause();
  }
  void unlock() { flag_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> flag_{false};
};

class yield_guard_t
{
 public:
  explicit yield_guard_t(yield_lock_t& l) : l_(l) { l_.lock(); }
  ~yield_guard_t() { l_.unlock(); }
  yield_guard_t(const yield_guard_t&) = delete;
  yield_guard_t& operator=(const yield_guard_t&) = delete;

 private:
  yield_lock_t& l_;
};

}  // namespace lci::comp_detail

#endif  // LCI_COMP_BACKOFF_HPP
