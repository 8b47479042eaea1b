// The matching engine's hash table (layout in matching_engine.hpp).
//
// insert(key, value, type), under the bucket's lock:
//  1. a slot holds the key: same type -> append (first, second, then the
//     slot's own list: count 1 -> 2 -> 3); complementary type -> take
//     first, shift second into first, and pull the oldest node of the
//     slot's list (if count was 3) into second: no search, no key compared;
//  2. else, if the shared overflow list is non-empty, look there for the key
//     (a key that arrived while the three slots were taken): same type ->
//     append a node, complementary type -> take the key's oldest node;
//  3. else store the value in a free slot, or, with none free, append a node
//     to the shared list.
// Invariants: a key's entries are either all in its slot (first, second,
// then its own list, oldest first) or all in the shared list, never split;
// entries under one key all have one type. The shared list keeps insertion
// order, so each key's nodes there are FIFO. Nodes of a slot's list carry
// only their value (the key and type are the slot's).
#include "resource/matching_engine.hpp"

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "resource/runtime.hpp"
#include "util/error.hpp"

namespace lci
{

namespace
{

constexpr unsigned kSlotShift = 2;  // slot fields start at bit 2
constexpr unsigned kSlotBits = 3;   // count (2 bits) + type (1 bit)
constexpr size_t kChunkNodes = 256;
constexpr unsigned kSpareShift = 11;  // bits 11-18: spare nodes kept
constexpr uint32_t kSpareMask = 0xFFu << kSpareShift;
// A burst of one key (a window of receives posted ahead of their sends)
// takes its nodes from the bucket's spares and gives them back there, so
// that in steady state neither touches the pool's lock.
constexpr uint32_t kMaxSpare = 128;

constexpr unsigned shift_of(int s) { return kSlotShift + kSlotBits * s; }

inline unsigned count_of(uint32_t w, int s) { return (w >> shift_of(s)) & 3u; }

inline uint32_t type_bit_of(uint32_t w, int s)
{
  return (w >> (shift_of(s) + 2)) & 1u;
}

inline uint32_t with_count(uint32_t w, int s, unsigned c)
{
  return (w & ~(3u << shift_of(s))) | (c << shift_of(s));
}

inline uint32_t with_slot(uint32_t w, int s, unsigned c, uint32_t type_bit)
{
  return (w & ~(7u << shift_of(s))) | ((c | (type_bit << 2)) << shift_of(s));
}

// Multiplicative (Fibonacci) hashing: the key's halves combined by one
// multiply, the sum scrambled by another; the bucket is the product's top
// bits, which every bit of the sum reaches. A few instructions on every
// insert, and keys that differ in the tag, the rank or both (arithmetic
// progressions, mostly) spread evenly.
inline size_t bucket_of(const match_key_t& k, unsigned shift, size_t mask)
{
  const uint64_t sum =
      k.hi + static_cast<uint64_t>(static_cast<uint32_t>(k.lo)) *
                 0xC2B2AE3D27D4EB4Full;
  return static_cast<size_t>((sum * 0x9E3779B97F4A7C15ull) >> shift) & mask;
}

}  // namespace

matching_engine_impl_t::matching_engine_impl_t(const matching_engine_attr_t& a)
    : attr(a)
{
  size_t n = attr.num_buckets;
  if (n == 0 || (n & (n - 1)))
    util::throw_fatal("alloc_matching_engine: num_buckets ", n,
                      " must be a power of two");
  const size_t per = sizeof(bucket_t) + sizeof(ext_t);
  if (n > (SIZE_MAX - 64) / per)
    util::throw_fatal("alloc_matching_engine: num_buckets ", n,
                      " is too large");
  // calloc: large tables come zeroed from the kernel, so the pages of
  // buckets never used are never touched; a zero bucket is empty.
  table_mem_ = std::calloc(1, n * per + 64);
  if (!table_mem_)
    util::throw_fatal("alloc_matching_engine: cannot allocate ", n * per,
                      " bytes for ", n, " buckets");
  uintptr_t p = reinterpret_cast<uintptr_t>(table_mem_);
  p = (p + 63) & ~static_cast<uintptr_t>(63);
  buckets_ = reinterpret_cast<bucket_t*>(p);
  ext_ = reinterpret_cast<ext_t*>(p + n * sizeof(bucket_t));
  mask_ = n - 1;
  // the top log2(n) bits of the hash; with one bucket, any bit (masked)
  shift_ = n == 1 ? 63 : static_cast<unsigned>(64 - __builtin_ctzll(n));
}

matching_engine_impl_t::~matching_engine_impl_t()
{
  for (node_t* c : pool_.chunks) delete[] c;
  std::free(table_mem_);
}

uint32_t matching_engine_impl_t::lock_bucket(bucket_t& b)
{
  unsigned spins = 0;
  for (;;) {
    uint32_t w = b.word.load(std::memory_order_relaxed);
    if (!(w & kLocked) &&
        b.word.compare_exchange_weak(w, w | kLocked, std::memory_order_acquire,
                                     std::memory_order_relaxed))
      return w | kLocked;
    // The holder may be descheduled (more threads than cores): after a
    // while, give the core away rather than burn the time slice.
    if (++spins < 256) {
      util::cpu_relax();
    } else {
      spins = 0;
      std::this_thread::yield();
    }
  }
}

matching_engine_impl_t::node_t* matching_engine_impl_t::get_node()
{
  util::spin_guard_t g(pool_.lock);
  if (!pool_.free) {
    node_t* chunk = new node_t[kChunkNodes];
    pool_.chunks.push_back(chunk);
    for (size_t i = 0; i < kChunkNodes; ++i) {
      chunk[i].next = pool_.free;
      pool_.free = &chunk[i];
    }
  }
  node_t* n = pool_.free;
  pool_.free = n->next;
  return n;
}

void matching_engine_impl_t::put_node(node_t* n)
{
  util::spin_guard_t g(pool_.lock);
  n->next = pool_.free;
  pool_.free = n;
}

// A node for bucket e: one of its spares, else from the pool.
matching_engine_impl_t::node_t* matching_engine_impl_t::take_node(ext_t& e,
                                                                  uint32_t& w)
{
  node_t* n = e.spare;
  if (!n) return get_node();
  e.spare = n->next;
  w -= 1u << kSpareShift;
  return n;
}

// Keeps up to kMaxSpare freed nodes in the bucket (no pool lock, and the
// node stays near the thread using the bucket); the rest go to the pool.
void matching_engine_impl_t::drop_node(ext_t& e, uint32_t& w, node_t* n)
{
  if (((w & kSpareMask) >> kSpareShift) >= kMaxSpare) {
    put_node(n);
    return;
  }
  n->next = e.spare;
  e.spare = n;
  w += 1u << kSpareShift;
}

size_t matching_engine_impl_t::overflow_nodes_allocated() const
{
  auto& pool = const_cast<pool_t&>(pool_);
  util::spin_guard_t g(pool.lock);
  return pool.chunks.size() * kChunkNodes;
}

namespace
{
// An overflow list (a slot's own, or the shared one): circular, singly
// linked, `last` points at the newest node and last->next at the oldest.
template <typename node_t>
inline void list_append(node_t*& last, node_t* n)
{
  if (last) {
    n->next = last->next;
    last->next = n;
  } else {
    n->next = n;
  }
  last = n;
}

// The oldest node with key k, and its predecessor; nullptr if none.
template <typename node_t>
inline node_t* list_find(node_t* last, const match_key_t& k, node_t** prev_out)
{
  node_t* prev = last;
  *prev_out = nullptr;
  do {
    node_t* cur = prev->next;
    if (cur->hi == k.hi && cur->lo == k.lo) {
      *prev_out = prev;
      return cur;
    }
    prev = cur;
  } while (prev != last);
  return nullptr;
}

// The oldest node with key k and value v, and its predecessor.
template <typename node_t>
inline node_t* list_find_value(node_t* last, const match_key_t& k, void* v,
                               node_t** prev_out)
{
  node_t* prev = last;
  *prev_out = nullptr;
  do {
    node_t* cur = prev->next;
    if (cur->value == v && cur->hi == k.hi && cur->lo == k.lo) {
      *prev_out = prev;
      return cur;
    }
    prev = cur;
  } while (prev != last);
  return nullptr;
}

// The node with value v, and its predecessor; nullptr if none.
template <typename node_t>
inline node_t* list_find_only_value(node_t* last, void* v, node_t** prev_out)
{
  node_t* prev = last;
  do {
    node_t* cur = prev->next;
    if (cur->value == v) {
      *prev_out = prev;
      return cur;
    }
    prev = cur;
  } while (prev != last);
  return nullptr;
}

// Unlinks n, whose predecessor is prev.
template <typename node_t>
inline void list_unlink(node_t*& last, node_t* prev, node_t* n)
{
  if (n == prev) {  // the only node
    last = nullptr;
    return;
  }
  prev->next = n->next;
  if (n == last) last = prev;
}
}  // namespace

// The two cases of one entry per key at a time (a receive posted before its
// message, or a message before its receive, in a bucket of one key) are
// decided first, without the general path's scan of the three slots: the
// bucket holds no entry (the new one goes to slot 0, where the scan would
// put it), or slot 0 holds this key's only entry and it is of the other
// type (matched, as the scan would find it first). Everything else goes to
// insert_locked, with the lock held.
template <typename Make>
[[gnu::always_inline]] inline void* matching_engine_impl_t::insert_impl(
    const match_key_t& key, type_t type, Make make)
{
  const size_t i = bucket_of(key, shift_, mask_);
  bucket_t& b = buckets_[i];
  const uint32_t tbit = static_cast<uint32_t>(type);
  static_assert(kEntryBits == (kOverflow | (3u << shift_of(0)) |
                               (3u << shift_of(1)) | (3u << shift_of(2))),
                "kEntryBits: the overflow bit and the slots' counts");
  uint32_t w = lock_bucket(b);
  if ((w & kEntryBits) == 0) {
    void* value = make();
    if (__builtin_expect(!value, 0)) {
      unlock_bucket(b, w);
      return kNotInserted;
    }
    b.hi[0] = key.hi;
    b.lo[0] = key.lo;
    b.first[0] = value;
    unlock_bucket(b, with_slot(w, 0, 1, tbit));
    return nullptr;
  }
  if (count_of(w, 0) == 1 && type_bit_of(w, 0) != tbit && b.hi[0] == key.hi &&
      b.lo[0] == key.lo) {
    void* matched = b.first[0];
    unlock_bucket(b, with_count(w, 0, 0));
    return matched;
  }
  return insert_locked(i, w, key, type, make);
}

template <typename Make>
[[gnu::always_inline]] inline void* matching_engine_impl_t::insert_locked(
    size_t i, uint32_t w, const match_key_t& key, type_t type, Make make)
{
  bucket_t& b = buckets_[i];
  const uint32_t tbit = static_cast<uint32_t>(type);
  int free_slot = -1;
  for (int s = 0; s < 3; ++s) {
    const unsigned c = count_of(w, s);
    if (c == 0) {
      if (free_slot < 0) free_slot = s;
      continue;
    }
    if (b.hi[s] != key.hi || b.lo[s] != key.lo) continue;
    ext_t& e = ext_[i];
    if (type_bit_of(w, s) == tbit) {  // same type: queue behind
      void* value = make();
      if (!value) {
        unlock_bucket(b, w);
        return kNotInserted;
      }
      if (c == 1) {
        e.second[s] = value;
        w = with_count(w, s, 2);
      } else {
        node_t* n = take_node(e, w);
        n->value = value;
        list_append(e.tail[s], n);
        w = with_count(w, s, 3);
      }
      unlock_bucket(b, w);
      return nullptr;
    }
    void* matched = b.first[s];  // complementary: the oldest
    pop_front(b, e, w, s);
    unlock_bucket(b, w);
    return matched;
  }

  if (w & kOverflow) {  // a key without a slot may wait in the list
    ext_t& e = ext_[i];
    node_t* prev;
    node_t* n = list_find(e.last, key, &prev);
    if (n) {
      if (n->type != type) {
        void* matched = n->value;
        list_unlink(e.last, prev, n);
        drop_node(e, w, n);
        if (!e.last) w &= ~kOverflow;
        unlock_bucket(b, w);
        return matched;
      }
      free_slot = -1;  // queue behind the key's nodes
    }
  }
  void* value = make();
  if (!value) {
    unlock_bucket(b, w);
    return kNotInserted;
  }
  if (free_slot >= 0) {
    b.hi[free_slot] = key.hi;
    b.lo[free_slot] = key.lo;
    b.first[free_slot] = value;
    w = with_slot(w, free_slot, 1, tbit);
  } else {
    ext_t& e = ext_[i];
    node_t* n = take_node(e, w);
    n->hi = key.hi;
    n->lo = key.lo;
    n->type = type;
    n->value = value;
    list_append(e.last, n);
    w |= kOverflow;
  }
  unlock_bucket(b, w);
  return nullptr;
}

void* matching_engine_impl_t::insert(const match_key_t& key, void* value,
                                     type_t type)
{
  return insert_impl(key, type, [value] { return value; });
}

void* matching_engine_impl_t::insert_lazy(const match_key_t& key, type_t type,
                                          void* (*make)(void*), void* ctx)
{
  return insert_impl(key, type, [make, ctx] { return make(ctx); });
}

// Drops the oldest entry of slot s: second moves up, and the oldest node
// of the slot's list (count 3) moves into second.
[[gnu::always_inline]] inline void matching_engine_impl_t::pop_front(
    bucket_t& b, ext_t& e, uint32_t& w, int s)
{
  const unsigned c = count_of(w, s);
  if (c == 1) {
    w = with_count(w, s, 0);
    return;
  }
  b.first[s] = e.second[s];
  if (c == 2)
    w = with_count(w, s, 1);
  else
    refill_second(e, w, s);
}

// Slot s (count 3) lost its second entry: the oldest node of its list takes
// its place; count 2 when that was the list's last node.
void matching_engine_impl_t::refill_second(ext_t& e, uint32_t& w, int s)
{
  node_t* tail = e.tail[s];
  node_t* n = tail->next;
  if (n == tail) {
    e.tail[s] = nullptr;
    w = with_count(w, s, 2);
  } else {
    tail->next = n->next;
  }
  e.second[s] = n->value;
  drop_node(e, w, n);
}

bool matching_engine_impl_t::remove(const match_key_t& key, void* value,
                                    type_t type)
{
  const size_t i = bucket_of(key, shift_, mask_);
  bucket_t& b = buckets_[i];
  const uint32_t tbit = static_cast<uint32_t>(type);
  uint32_t w = lock_bucket(b);
  bool found = false;
  bool slotted = false;
  for (int s = 0; s < 3 && !slotted; ++s) {
    const unsigned c = count_of(w, s);
    if (c == 0 || b.hi[s] != key.hi || b.lo[s] != key.lo) continue;
    slotted = true;
    if (type_bit_of(w, s) != tbit) break;
    ext_t& e = ext_[i];
    if (b.first[s] == value) {
      pop_front(b, e, w, s);
      found = true;
    } else if (c >= 2 && e.second[s] == value) {
      if (c == 2)
        w = with_count(w, s, 1);
      else
        refill_second(e, w, s);
      found = true;
    } else if (c == 3) {
      node_t* prev;
      node_t* n = list_find_only_value(e.tail[s], value, &prev);
      if (n) {
        list_unlink(e.tail[s], prev, n);
        drop_node(e, w, n);
        if (!e.tail[s]) w = with_count(w, s, 2);
        found = true;
      }
    }
  }
  if (!slotted && (w & kOverflow)) {
    ext_t& e = ext_[i];
    node_t* prev;
    node_t* n = list_find_value(e.last, key, value, &prev);
    if (n && n->type == type) {
      list_unlink(e.last, prev, n);
      drop_node(e, w, n);
      if (!e.last) w &= ~kOverflow;
      found = true;
    }
  }
  unlock_bucket(b, w);
  return found;
}

size_t matching_engine_impl_t::count_entries()
{
  size_t total = 0;
  for (size_t i = 0; i <= mask_; ++i) {
    bucket_t& b = buckets_[i];
    if (b.word.load(std::memory_order_acquire) == 0) continue;
    uint32_t w = lock_bucket(b);
    // inline entries: at most two per slot; every overflow node is one more
    auto nodes = [](node_t* last) {
      size_t k = 0;
      node_t* n = last;
      do {
        ++k;
        n = n->next;
      } while (n != last);
      return k;
    };
    for (int s = 0; s < 3; ++s) {
      total += std::min(count_of(w, s), 2u);
      if (count_of(w, s) == 3) total += nodes(ext_[i].tail[s]);
    }
    if (w & kOverflow) total += nodes(ext_[i].last);
    unlock_bucket(b, w);
  }
  return total;
}

void matching_engine_impl_t::for_each_impl(void (*f)(void*, const match_key_t&,
                                                     void*, type_t),
                                           void* ctx)
{
  for (size_t i = 0; i <= mask_; ++i) {
    bucket_t& b = buckets_[i];
    if (b.word.load(std::memory_order_acquire) == 0) continue;
    uint32_t w = lock_bucket(b);
    ext_t& e = ext_[i];
    for (int s = 0; s < 3; ++s) {
      const unsigned c = count_of(w, s);
      if (c == 0) continue;
      const match_key_t key{b.hi[s], b.lo[s]};
      type_t t = static_cast<type_t>(type_bit_of(w, s));
      f(ctx, key, b.first[s], t);
      if (c >= 2) f(ctx, key, e.second[s], t);
      if (c == 3) {
        node_t* n = e.tail[s];
        do {
          n = n->next;
          f(ctx, key, n->value, t);
        } while (n != e.tail[s]);
      }
    }
    // every node of the shared list (the entries of keys without a slot)
    // carries its key and type
    if (w & kOverflow) {
      node_t* last = e.last;
      node_t* n = last;
      do {
        n = n->next;
        f(ctx, match_key_t{n->hi, n->lo}, n->value, n->type);
      } while (n != last);
    }
    unlock_bucket(b, w);
  }
}

void matching_engine_impl_t::clear_impl(void (*f)(void*, void*, type_t),
                                        void* ctx)
{
  for (size_t i = 0; i <= mask_; ++i) {
    bucket_t& b = buckets_[i];
    // An empty bucket is left unwritten (its page may never have been).
    if (b.word.load(std::memory_order_acquire) == 0) continue;
    uint32_t w = lock_bucket(b);
    ext_t& e = ext_[i];
    for (int s = 0; s < 3; ++s) {
      const unsigned c = count_of(w, s);
      if (c == 0) continue;
      type_t t = static_cast<type_t>(type_bit_of(w, s));
      f(ctx, b.first[s], t);
      if (c >= 2) f(ctx, e.second[s], t);
      if (c == 3) {  // the slot's own list, oldest first
        node_t* n = e.tail[s]->next;
        e.tail[s]->next = nullptr;
        e.tail[s] = nullptr;
        while (n) {
          node_t* next = n->next;
          f(ctx, n->value, t);
          put_node(n);
          n = next;
        }
      }
    }
    // Then the shared list: the nodes of keys without a slot, oldest first.
    if (w & kOverflow) {
      node_t* n = e.last->next;
      e.last->next = nullptr;
      e.last = nullptr;
      while (n) {
        node_t* next = n->next;
        f(ctx, n->value, n->type);
        put_node(n);
        n = next;
      }
    }
    while (node_t* n = e.spare) {
      e.spare = n->next;
      put_node(n);
    }
    unlock_bucket(b, 0);
  }
}

void matching_engine_impl_t::replace_impl(type_t type, void* (*f)(void*, void*),
                                          void* ctx)
{
  const uint32_t tbit = static_cast<uint32_t>(type);
  for (size_t i = 0; i <= mask_; ++i) {
    bucket_t& b = buckets_[i];
    if (b.word.load(std::memory_order_acquire) == 0) continue;
    uint32_t w = lock_bucket(b);
    ext_t& e = ext_[i];
    for (int s = 0; s < 3; ++s) {
      const unsigned c = count_of(w, s);
      if (c == 0 || type_bit_of(w, s) != tbit) continue;
      b.first[s] = f(ctx, b.first[s]);
      if (c >= 2) e.second[s] = f(ctx, e.second[s]);
      if (c == 3) {
        node_t* n = e.tail[s];
        do {
          n = n->next;
          n->value = f(ctx, n->value);
        } while (n != e.tail[s]);
      }
    }
    if (w & kOverflow) {
      node_t* n = e.last;
      do {
        n = n->next;
        if (n->type == type) n->value = f(ctx, n->value);
      } while (n != e.last);
    }
    unlock_bucket(b, w);
  }
}

// ---- the matching-engine operations -------------------------------------
// (alloc and free are in core/alloc_matching_engine.cpp: they hand early
// sends over and delete waiting receives, both core objects)

matching_entry_val_t matching_engine_insert_x::call_impl(
    matching_engine_t matching_engine, matching_entry_key_t key,
    matching_entry_val_t value, matching_entry_type_t entry_type, runtime_t)
{
  const char* call = "matching_engine_insert";
  matching_engine_impl_t* me = util::checked(matching_engine.p_impl, call);
  checked_engine(matching_engine, nullptr, call);
  if (!value) util::throw_fatal(call, ": null value (nullptr means no match)");
  if (entry_type != matching_entry_type_t::send &&
      entry_type != matching_entry_type_t::recv)
    util::throw_fatal(call, ": entry_type ", static_cast<int>(entry_type),
                      " is neither send (0) nor recv (1)");
  auto type = entry_type == matching_entry_type_t::send
                  ? matching_engine_impl_t::type_t::send
                  : matching_engine_impl_t::type_t::recv;
  return me->insert(matching_engine_impl_t::user_key(key), value, type);
}

matching_engine_t get_default_matching_engine_x::call_impl(runtime_t runtime)
{
  return matching_engine_t(
      resolve_runtime(runtime, "get_default_matching_engine")->default_me);
}

}  // namespace lci
