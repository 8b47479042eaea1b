// A bounded double-ended queue of trivially copyable values guarded by a
// spinlock (the per-thread deque of the packet pool, paper 4.1.2).
//
// The owner pushes and pops at the tail (the hot end: the value put last is
// the one most likely still in its cache); a thief removes from the head
// (the cold end) with move_head_to(), which moves a batch from one locked
// deque to another. The capacity is fixed at construction (rounded up to a
// power of two); the caller guarantees it is never exceeded (the packet pool
// sizes every deque for all of its packets), so no operation allocates.
//
// Every member except size_hint() requires the caller to hold lock().
// size_hint() reads head and tail without the lock: exact when no other
// thread is touching the deque, otherwise a recent value (never negative).
// head and tail are atomics only so that size_hint() is race-free; under
// the lock they are read and written with relaxed order (plain moves on
// x86), the lock providing the ordering. Thread safety: any-thread, under
// lock() as above.
#ifndef LCI_UTIL_DEQUE_HPP
#define LCI_UTIL_DEQUE_HPP

#include <atomic>
#include <cstddef>
#include <memory>
#include <type_traits>

#include "util/spinlock.hpp"

namespace lci::util
{

template <typename T>
class locked_deque_t
{
  static_assert(std::is_trivially_copyable_v<T>, "values are copied");

 public:
  explicit locked_deque_t(size_t min_capacity)
  {
    size_t cap = 1;
    while (cap < min_capacity) cap *= 2;
    mask_ = cap - 1;
    ring_.reset(new T[cap]);
  }
  locked_deque_t(const locked_deque_t&) = delete;
  locked_deque_t& operator=(const locked_deque_t&) = delete;

  void lock() { lock_.lock(); }
  bool try_lock() { return lock_.try_lock(); }
  void unlock() { lock_.unlock(); }

  size_t capacity() const { return mask_ + 1; }
  size_t size() const
  {
    return tail_.load(std::memory_order_relaxed) -
           head_.load(std::memory_order_relaxed);
  }
  bool empty() const
  {
    return tail_.load(std::memory_order_relaxed) ==
           head_.load(std::memory_order_relaxed);
  }
  void push_tail(T v)
  {
    size_t t = tail_.load(std::memory_order_relaxed);
    ring_[t & mask_] = v;
    tail_.store(t + 1, std::memory_order_relaxed);
  }
  // Precondition: !empty().
  T pop_tail()
  {
    size_t t = tail_.load(std::memory_order_relaxed) - 1;
    T v = ring_[t & mask_];
    tail_.store(t, std::memory_order_relaxed);
    return v;
  }
  // Moves the n oldest values (n <= size()) to the tail of `to`, keeping
  // their order; both deques locked, to.size() + n <= to.capacity().
  void move_head_to(locked_deque_t& to, size_t n)
  {
    size_t h = head_.load(std::memory_order_relaxed);
    size_t t = to.tail_.load(std::memory_order_relaxed);
    for (size_t i = 0; i < n; ++i)
      to.ring_[(t + i) & to.mask_] = ring_[(h + i) & mask_];
    head_.store(h + n, std::memory_order_relaxed);
    to.tail_.store(t + n, std::memory_order_relaxed);
  }

  // Lock-free, approximate under concurrency (see above).
  size_t size_hint() const
  {
    size_t t = tail_.load(std::memory_order_relaxed);
    size_t h = head_.load(std::memory_order_relaxed);
    return t > h ? t - h : 0;
  }

 private:
  spinlock_t lock_;
  // head_ only grows (removals at the head); tail_ moves both ways; both
  // are unbounded counters masked into the ring (2^64 never wraps).
  std::atomic<size_t> head_{0};
  std::atomic<size_t> tail_{0};
  size_t mask_ = 0;
  std::unique_ptr<T[]> ring_;
};

}  // namespace lci::util

#endif  // LCI_UTIL_DEQUE_HPP
