// A growable array that is rarely written and often read (paper 4.1.1):
// writes and appends take a lock; reads are lock-free. A resize copies into
// an array twice the size and publishes it; the old array is retired, not
// freed, until the mpmc_array itself is destroyed, so a concurrent reader
// never touches freed memory. Thread safety: any-thread.
#ifndef LCI_UTIL_MPMC_ARRAY_HPP
#define LCI_UTIL_MPMC_ARRAY_HPP

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace lci::util
{

template <typename T>
class mpmc_array_t
{
  static_assert(std::is_trivially_copyable_v<T>, "entries are copied");

 public:
  explicit mpmc_array_t(size_t initial = 64)
  {
    auto* a = new block_t(initial < 1 ? 1 : initial);
    retired_.emplace_back(a);
    cur_.store(a, std::memory_order_release);
  }

  // Lock-free read; `def` when idx was never written.
  T get(size_t idx, T def = T()) const
  {
    block_t* a = cur_.load(std::memory_order_acquire);
    if (idx >= a->size) return def;
    return a->data[idx].load(std::memory_order_acquire);
  }

  void put(size_t idx, T value)
  {
    std::lock_guard<std::mutex> g(mu_);
    grow_locked(idx + 1);
    cur_.load(std::memory_order_relaxed)
        ->data[idx]
        .store(value, std::memory_order_release);
    if (idx >= count_) count_ = idx + 1;
    count_hint_.store(count_, std::memory_order_release);
  }

  // Appends and returns the index.
  size_t push_back(T value)
  {
    std::lock_guard<std::mutex> g(mu_);
    size_t idx = count_;
    grow_locked(idx + 1);
    cur_.load(std::memory_order_relaxed)
        ->data[idx]
        .store(value, std::memory_order_release);
    count_ = idx + 1;
    count_hint_.store(count_, std::memory_order_release);
    return idx;
  }

  // Reserves n empty slots after the last one written (later appends go
  // after them; put fills them) and returns the first index.
  size_t reserve(size_t n)
  {
    std::lock_guard<std::mutex> g(mu_);
    size_t idx = count_;
    grow_locked(idx + n);
    count_ = idx + n;
    count_hint_.store(count_, std::memory_order_release);
    return idx;
  }

  // Number of slots ever written, read without the lock (may lag).
  size_t size_hint() const
  {
    return count_hint_.load(std::memory_order_acquire);
  }

  size_t size() const
  {
    std::lock_guard<std::mutex> g(mu_);
    return count_;
  }

 private:
  struct block_t {
    explicit block_t(size_t n) : size(n), data(new std::atomic<T>[n])
    {
      for (size_t i = 0; i < n; ++i)
        data[i].store(T(), std::memory_order_relaxed);
    }
    size_t size;
    std::unique_ptr<std::atomic<T>[]> data;
  };

  void grow_locked(size_t need)
  {
    block_t* a = cur_.load(std::memory_order_relaxed);
    if (need <= a->size) return;
    size_t n = a->size;
    while (n < need) n *= 2;
    auto* b = new block_t(n);
    for (size_t i = 0; i < a->size; ++i)
      b->data[i].store(a->data[i].load(std::memory_order_relaxed),
                       std::memory_order_relaxed);
    retired_.emplace_back(b);
    cur_.store(b, std::memory_order_release);
  }

  mutable std::mutex mu_;
  std::atomic<block_t*> cur_;
  size_t count_ = 0;
  std::atomic<size_t> count_hint_{0};
  std::vector<std::unique_ptr<block_t>> retired_;  // every block ever made
};

}  // namespace lci::util

#endif  // LCI_UTIL_MPMC_ARRAY_HPP
