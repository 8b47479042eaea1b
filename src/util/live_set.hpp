// The set of live objects of one kind (runtimes, devices, completion
// objects...), so that freeing something twice, or using a freed or foreign
// handle, is a clear error instead of a crash. Handles are pointers: the
// set is consulted before anything dereferences one.
//
// add and remove take a mutex; contains/check are lock-free and cheap (a
// hash, then one or two loads from a table that only allocation and free
// write), so the posting and completion fast paths may use them. The table
// is open-addressed (linear probing, at most half full, removed entries
// become tombstones); when it fills up it is copied into a larger one and
// the old one is kept until exit, so a concurrent lookup never reads freed
// memory. A lookup racing with the free of the same object may see it
// either way: using a handle while another thread frees it is a
// thread-safety error (undefined), not a bad argument.
// Thread safety: any-thread.
#ifndef LCI_UTIL_LIVE_SET_HPP
#define LCI_UTIL_LIVE_SET_HPP

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "util/error.hpp"

namespace lci::util
{

class live_set_t
{
 public:
  live_set_t() { grow(64); }

  void add(const void* p)
  {
    std::lock_guard<std::mutex> g(mu_);
    if ((used_ + 1) * 2 > table_.load(std::memory_order_relaxed)->size())
      grow(live_ * 4 + 64);
    insert(table_.load(std::memory_order_relaxed), p);
    ++used_;
    ++live_;
  }

  bool contains(const void* p) const
  {
    if (p == nullptr || p == kTombstone) return false;
    const table_t* t = table_.load(std::memory_order_acquire);
    for (size_t i = t->home(p);; i = (i + 1) & t->mask) {
      const void* v = t->slots[i].load(std::memory_order_acquire);
      if (v == p) return true;
      if (v == nullptr) return false;
    }
  }

  // Throws "`call`: <what> <p> is not allocated (already freed?)".
  void remove(const void* p, const char* call, const char* what)
  {
    std::lock_guard<std::mutex> g(mu_);
    table_t* t = table_.load(std::memory_order_relaxed);
    if (p != nullptr && p != kTombstone) {
      for (size_t i = t->home(p);; i = (i + 1) & t->mask) {
        const void* v = t->slots[i].load(std::memory_order_relaxed);
        if (v == nullptr) break;
        if (v == p) {
          t->slots[i].store(kTombstone, std::memory_order_release);
          --live_;
          return;
        }
      }
    }
    throw_fatal(call, ": ", what, " ", p,
                " is not allocated (already freed, or not from this "
                "library?)");
  }

  void check(const void* p, const char* call, const char* what) const
  {
    if (__builtin_expect(!contains(p), 0))
      throw_fatal(call, ": ", what, " ", p,
                  " is not allocated (already freed, or not from this "
                  "library?)");
  }

  size_t size() const
  {
    std::lock_guard<std::mutex> g(mu_);
    return live_;
  }

 private:
  static inline const void* const kTombstone = reinterpret_cast<const void*>(1);

  struct table_t {
    size_t mask;
    std::unique_ptr<std::atomic<const void*>[]> slots;
    explicit table_t(size_t n)
        : mask(n - 1), slots(new std::atomic<const void*>[n])
    {
      for (size_t i = 0; i < n; ++i)
        slots[i].store(nullptr, std::memory_order_relaxed);
    }
    size_t size() const { return mask + 1; }
    size_t home(const void* p) const
    {
      uint64_t x = reinterpret_cast<uintptr_t>(p) * 0x9E3779B97F4A7C15ull;
      return static_cast<size_t>(x >> 32) & mask;
    }
  };

  static void insert(table_t* t, const void* p)
  {
    for (size_t i = t->home(p);; i = (i + 1) & t->mask) {
      const void* v = t->slots[i].load(std::memory_order_relaxed);
      if (v == nullptr || v == kTombstone) {
        t->slots[i].store(p, std::memory_order_release);
        return;
      }
    }
  }

  // Under mu_ (or in the constructor): a table of at least `want` slots
  // holding the live entries, published for lock-free readers.
  void grow(size_t want)
  {
    size_t n = 64;
    while (n < want) n *= 2;
    auto next = std::make_unique<table_t>(n);
    table_t* old = table_.load(std::memory_order_relaxed);
    if (old) {
      for (size_t i = 0; i < old->size(); ++i) {
        const void* v = old->slots[i].load(std::memory_order_relaxed);
        if (v != nullptr && v != kTombstone) insert(next.get(), v);
      }
    }
    used_ = live_;
    table_.store(next.get(), std::memory_order_release);
    tables_.push_back(std::move(next));
  }

  mutable std::mutex mu_;
  std::atomic<table_t*> table_{nullptr};
  std::vector<std::unique_ptr<table_t>> tables_;  // every table, kept
  size_t used_ = 0;                               // live + tombstones
  size_t live_ = 0;
};

}  // namespace lci::util

#endif  // LCI_UTIL_LIVE_SET_HPP
