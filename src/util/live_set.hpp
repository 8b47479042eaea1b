// The set of live objects of one kind (runtimes, devices, completion
// objects...), so that freeing something twice, or using a freed or foreign
// handle, is a clear error instead of a crash. Handles are pointers: the
// set is consulted before anything dereferences one.
//
// add and remove take a mutex; contains/check are lock-free and cheap (a
// hash, then one or two loads from a table that only allocation and free
// write), so the posting and completion fast paths may use them. The table
// is open-addressed (linear probing, at most half full; a removed entry
// becomes a tombstone, reused by a later add). When live entries and
// tombstones fill half of it, the table is compacted in place if the live
// entries fit (readers retry the few lookups that overlap a compaction: a
// sequence counter, as in a seqlock), else copied into a table twice as
// large; old tables are kept until exit (a concurrent lookup may still
// read one), so they add up to at most the size of the largest.
// check() first asks a per-thread cache: the handle this thread last
// checked in this set, and the set's free count (epoch) at that time. While
// nothing of the set was freed since, the same handle is still live: two
// loads and compares instead of a hash lookup (the posting loop passes the
// same device, pool and completion object again and again). A free on
// another thread that happened before this call (any synchronization
// between the two) has bumped the epoch visibly, so the cache never
// answers for a handle freed before the call.
// A lookup racing with the free of the same object may see it either way:
// using a handle while another thread frees it is a thread-safety error
// (undefined), not a bad argument.
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
#include "util/spinlock.hpp"

namespace lci::util
{

// The per-thread cache of check(): one entry per live set (sets are few:
// one per kind of handle; sets beyond kSlots share entries by their index
// modulo kSlots, which only costs hits). Defined below, with the
// initial-exec TLS model: a fixed offset from the thread pointer, so that
// check() inlines to a few loads and compares (no __tls_get_addr call).
#if defined(__GNUC__) && !defined(__APPLE__)
#define LCI_TLS_INITIAL_EXEC __attribute__((tls_model("initial-exec")))
#else
#define LCI_TLS_INITIAL_EXEC
#endif
struct live_cache_t {
  static constexpr size_t kSlots = 16;
  struct entry_t {
    const void* set;
    const void* p;
    uint64_t epoch;
  };
  static entry_t* entries();
};
// (an inline variable, constant-initialized: its definition is visible to
// every use, which then needs no TLS init function call; 16 x 24 bytes,
// well inside glibc's static TLS surplus for libraries loaded with dlopen)
inline thread_local live_cache_t::entry_t
    g_live_cache[live_cache_t::kSlots] LCI_TLS_INITIAL_EXEC = {};
inline live_cache_t::entry_t* live_cache_t::entries() { return g_live_cache; }

class live_set_t
{
 public:
  live_set_t() : slot_(next_slot()) { resize(kMinSlots); }

  void add(const void* p)
  {
    std::lock_guard<std::mutex> g(mu_);
    table_t* t = table_.load(std::memory_order_relaxed);
    if ((used_ + 1) * 2 > t->size()) {
      if ((live_ + 1) * 4 > t->size())
        resize(t->size() * 2);
      else
        compact(t);
      t = table_.load(std::memory_order_relaxed);
    }
    if (insert(t, p)) ++used_;
    ++live_;
  }

  bool contains(const void* p) const
  {
    if (p == nullptr || is_tombstone(p)) return false;
    for (;;) {
      const uint64_t v1 = version_.load(std::memory_order_acquire);
      if (__builtin_expect(v1 & 1, 0)) {  // a compaction is running
        cpu_relax();
        continue;
      }
      const table_t* t = table_.load(std::memory_order_acquire);
      bool found = false;
      size_t i = t->home(p);
      for (size_t n = 0; n <= t->mask; ++n, i = (i + 1) & t->mask) {
        // acquire: a slot a compaction wrote (with release, after making
        // the counter odd) makes the counter's change visible below
        const void* v = t->slots[i].load(std::memory_order_acquire);
        if (v == p) {
          found = true;
          break;
        }
        if (v == nullptr) break;
      }
      if (__builtin_expect(version_.load(std::memory_order_relaxed) == v1, 1))
        return found;
    }
  }

  // Throws "`call`: <what> <p> is not allocated (already freed?)".
  void remove(const void* p, const char* call, const char* what)
  {
    std::lock_guard<std::mutex> g(mu_);
    table_t* t = table_.load(std::memory_order_relaxed);
    if (p != nullptr && !is_tombstone(p)) {
      size_t i = t->home(p);
      for (size_t n = 0; n <= t->mask; ++n, i = (i + 1) & t->mask) {
        const void* v = t->slots[i].load(std::memory_order_relaxed);
        if (v == nullptr) break;
        if (v == p) {
          t->slots[i].store(tombstone(), std::memory_order_relaxed);
          --live_;
          // before the free itself: a thread that later checks p (legally,
          // after learning of the free) sees a new epoch and looks it up
          epoch_.fetch_add(1, std::memory_order_release);
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
    if (__builtin_expect(cached(p), 1)) return;
    check_slow(p, call, what, epoch_.load(std::memory_order_acquire));
  }

  // The per-thread cache alone: true when p is the handle this thread
  // checked last in this set and nothing of the set was freed since (then
  // p is live); false says nothing. No call, no side effect: for fast paths
  // that fall back to their full checks.
  bool cached(const void* p) const
  {
    const live_cache_t::entry_t& c = live_cache_t::entries()[slot_];
    return c.p == p && c.set == this &&
           c.epoch == epoch_.load(std::memory_order_acquire);
  }

  // check() when the cache does not answer: out of line, so that the
  // cached case inlines to a few loads and compares.
  // (epoch: read before the lookup)
  [[gnu::noinline]] void check_slow(const void* p, const char* call,
                                    const char* what, uint64_t epoch) const
  {
    if (__builtin_expect(!contains(p), 0))
      throw_fatal(call, ": ", what, " ", p,
                  " is not allocated (already freed, or not from this "
                  "library?)");
    // the epoch read before the lookup: a free that ran in between makes
    // the next check look up again
    live_cache_t::entries()[slot_] = {this, p, epoch};
  }

  size_t size() const
  {
    std::lock_guard<std::mutex> g(mu_);
    return live_;
  }

 private:
  static constexpr size_t kMinSlots = 64;
  // a removed entry (not a valid object address); compared as an integer,
  // since a pointer made by reinterpret_cast is not a constant expression
  static constexpr uintptr_t kTombstoneBits = 1;
  static bool is_tombstone(const void* v)
  {
    return reinterpret_cast<uintptr_t>(v) == kTombstoneBits;
  }
  static const void* tombstone()
  {
    return reinterpret_cast<const void*>(kTombstoneBits);
  }

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

  // Under mu_: stores p in the first free slot of its probe sequence; true
  // when that slot was empty (not a tombstone reused).
  static bool insert(table_t* t, const void* p)
  {
    for (size_t i = t->home(p);; i = (i + 1) & t->mask) {
      const void* v = t->slots[i].load(std::memory_order_relaxed);
      if (v == nullptr || is_tombstone(v)) {
        t->slots[i].store(p, std::memory_order_release);
        return v == nullptr;
      }
    }
  }

  // Under mu_ (or in the constructor): a new table of n slots holding the
  // live entries, published for lock-free readers; the old one is kept.
  void resize(size_t n)
  {
    auto next = std::make_unique<table_t>(n);
    table_t* old = table_.load(std::memory_order_relaxed);
    if (old) {
      for (size_t i = 0; i < old->size(); ++i) {
        const void* v = old->slots[i].load(std::memory_order_relaxed);
        if (v != nullptr && !is_tombstone(v)) insert(next.get(), v);
      }
    }
    used_ = live_;
    table_.store(next.get(), std::memory_order_release);
    tables_.push_back(std::move(next));
  }

  // Under mu_: drops the tombstones of `t` in place. Readers that overlap
  // see the sequence counter change (or odd) and look again.
  void compact(table_t* t)
  {
    std::vector<const void*> keep;
    keep.reserve(live_);
    for (size_t i = 0; i < t->size(); ++i) {
      const void* v = t->slots[i].load(std::memory_order_relaxed);
      if (v != nullptr && !is_tombstone(v)) keep.push_back(v);
    }
    const uint64_t v = version_.load(std::memory_order_relaxed);
    version_.store(v + 1, std::memory_order_relaxed);
    // release stores (insert's too): a reader that loads one of them sees
    // the odd counter after it (no fences: ThreadSanitizer ignores them)
    for (size_t i = 0; i < t->size(); ++i)
      t->slots[i].store(nullptr, std::memory_order_release);
    for (const void* p : keep) insert(t, p);
    version_.store(v + 2, std::memory_order_release);
    used_ = live_;
  }

  static size_t next_slot()
  {
    static std::atomic<size_t> n{0};
    return n.fetch_add(1, std::memory_order_relaxed) % live_cache_t::kSlots;
  }

  const size_t slot_;               // this set's entry in live_cache_t
  std::atomic<uint64_t> epoch_{0};  // frees so far (removes)
  mutable std::mutex mu_;
  std::atomic<uint64_t> version_{0};  // odd while a compaction runs
  std::atomic<table_t*> table_{nullptr};
  std::vector<std::unique_ptr<table_t>> tables_;  // every table, kept
  size_t used_ = 0;                               // live + tombstones
  size_t live_ = 0;
};

}  // namespace lci::util

#endif  // LCI_UTIL_LIVE_SET_HPP
