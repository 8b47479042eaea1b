// A test-and-test-and-set spinlock with try_lock: the building block of the
// library's "never block on the critical path" rule. Thread safety: any-thread.
#ifndef LCI_UTIL_SPINLOCK_HPP
#define LCI_UTIL_SPINLOCK_HPP

#include <atomic>

namespace lci::util
{

inline void cpu_relax()
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

class spinlock_t
{
 public:
  bool try_lock()
  {
    return !flag_.load(std::memory_order_relaxed) &&
           !flag_.exchange(true, std::memory_order_acquire);
  }
  void lock()
  {
    while (!try_lock()) {
      while (flag_.load(std::memory_order_relaxed)) cpu_relax();
    }
  }
  void unlock() { flag_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> flag_{false};
};

// RAII guard for lock(); use try_lock() directly where failure must become
// a retry.
class spin_guard_t
{
 public:
  explicit spin_guard_t(spinlock_t& l) : l_(l) { l_.lock(); }
  ~spin_guard_t() { l_.unlock(); }
  spin_guard_t(const spin_guard_t&) = delete;
  spin_guard_t& operator=(const spin_guard_t&) = delete;

 private:
  spinlock_t& l_;
};

}  // namespace lci::util

#endif  // LCI_UTIL_SPINLOCK_HPP
