// Matches incoming sends with posted receives (paper 4.1.3). A key is made
// from (source rank, tag) restricted by the matching policy; insert() either
// stores the value (returns nullptr) or, when an entry of the complementary
// type waits under the same key, removes and returns it (oldest first: FIFO
// per key).
//
// Layout (see matching_engine.cpp for the algorithm):
//
//   buckets_[num_buckets]   bucket_t, exactly one 64-byte cache line:
//     bytes 0-3    word      one atomic 32-bit word: bit 0 the spinlock,
//                            bit 1 "the shared overflow list is
//                            non-empty", bits 2-10 three slots x (count:
//                            2 bits, 0 empty, 1 or 2 entries inline, 3 two
//                            inline and more in the slot's own list; type:
//                            1 bit), bits
//                            11-18 the number of spare nodes. Locking is a
//                            CAS that sets bit 0 and reads the state;
//                            unlocking is one release store of the new
//                            state. An all-zero word is an empty bucket.
//     bytes 4-15   lo[3]     the 32-bit half of each slot's key
//     bytes 16-39  hi[3]     the 64-bit half of each slot's key
//     bytes 40-63  first[3]  the oldest entry of each slot's queue
//   ext_[num_buckets]       ext_t, one line, touched only beyond one entry
//                           per key:
//     second[3]             the second entry of each slot's queue
//     tail[3]               each slot's own overflow queue (its third and
//                           later entries): circular, singly linked, tail
//                           points at the newest node and tail->next at the
//                           oldest; null when empty
//     last                  tail of the bucket's shared overflow list (the
//                           entries of keys without a slot; circular, in
//                           insertion order), or null
//     spare                 up to 128 free overflow nodes kept by the
//                           bucket
//
// So a bucket is a fixed array of three queues (one per key present) and a
// queue a fixed array of two entries followed by a linked list of its own;
// the first entries sit next to the keys, so at low load (one entry per
// key) an insert reads and writes one cache line and allocates nothing. A
// slotted key's third and later entries go to its own list, so appending
// and taking its oldest are O(1) however long the queue (a window of
// receives posted ahead of their sends) and whatever other keys wait in the
// bucket. Only the entries of a fourth key (all three slots taken when it
// arrived) go to the shared list, searched by key. Overflow nodes (32
// bytes) come from the bucket's spares, else from a per-engine free list
// refilled by chunks of 256 (so no allocation per insert once warm).
// Both tables (64 + 64 bytes per bucket: 8 MB of address space for the
// default 65,536 buckets) come from calloc, so the pages of buckets never
// used are never touched.
//
// A key is 96 bits, (hi 64, lo 32), and encodes its policy, so keys of
// different policies never compare equal:
//   rank_tag   hi = tag,  lo = rank (>= 0)
//   rank_only  hi = rank, lo = kRankOnly (-1)
//   tag_only   hi = tag,  lo = kTagOnly  (-2)
//   none       hi = 0,    lo = kNone     (-3)
// A user-supplied make_key_fn replaces make_key for its engine: its 64-bit
// result becomes (hi, kUser), a marker make_key never produces.
//
// Thread safety: any-thread; threads touching different buckets share no
// cache line except the overflow node pool, used only beyond the fixed
// arrays. make_key_fn is set before the engine is shared.
#ifndef LCI_RESOURCE_MATCHING_ENGINE_HPP
#define LCI_RESOURCE_MATCHING_ENGINE_HPP

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "lci.hpp"
#include "util/spinlock.hpp"

namespace lci
{

class runtime_impl_t;

struct match_key_t {
  uint64_t hi;  // tag, or rank for rank_only, or a user key
  int32_t lo;   // rank (>= 0) for rank_tag, else a negative policy marker
  bool operator==(const match_key_t& o) const
  {
    return hi == o.hi && lo == o.lo;
  }
  bool operator!=(const match_key_t& o) const { return !(*this == o); }
};

class matching_engine_impl_t
{
 public:
  enum class type_t : uint8_t { send = 0, recv = 1 };

  static constexpr int32_t kRankOnly = -1;
  static constexpr int32_t kTagOnly = -2;
  static constexpr int32_t kNone = -3;
  static constexpr int32_t kUser = -4;  // lo of every user key

  // A pluggable key function (paper 3.3.2: "users can supply their own
  // make_key function"; alloc_matching_engine's `make_key`): when set, the
  // key of (rank, tag, policy) is (its 64-bit result, kUser), so user keys
  // never equal built-in ones. Plain function pointer: no capture.
  using make_key_fn_t = matching_engine_make_key_t;

  explicit matching_engine_impl_t(const matching_engine_attr_t& attr);
  ~matching_engine_impl_t();
  matching_engine_impl_t(const matching_engine_impl_t&) = delete;
  matching_engine_impl_t& operator=(const matching_engine_impl_t&) = delete;

  // The default key function. Under rank_tag, rank must be >= 0 (real ranks
  // are; wildcards select another policy before this).
  static match_key_t make_key(int rank, tag_t tag, matching_policy_t policy)
  {
    switch (policy) {
      case matching_policy_t::rank_tag:
        return match_key_t{tag, rank};
      case matching_policy_t::rank_only:
        return match_key_t{static_cast<uint64_t>(static_cast<uint32_t>(rank)),
                           kRankOnly};
      case matching_policy_t::tag_only:
        return match_key_t{tag, kTagOnly};
      default:
        return match_key_t{0, kNone};
    }
  }

  // The engine key of a user's 64-bit key (matching_engine_insert, make_key).
  static match_key_t user_key(matching_entry_key_t k)
  {
    return match_key_t{k, kUser};
  }

  // The key this engine uses: make_key_fn if set, else make_key.
  match_key_t key(int rank, tag_t tag, matching_policy_t policy) const
  {
    return make_key_fn ? user_key(make_key_fn(rank, tag, policy))
                       : make_key(rank, tag, policy);
  }

  // Stores value (returns nullptr) or returns the oldest waiting entry of
  // the complementary type under the same key, removing it.
  void* insert(const match_key_t& key, void* value, type_t type);
  // insert() whose value is made only when it is stored: make(ctx), called
  // under the bucket's lock (it must not throw or use the engine). A null
  // from make stores nothing and returns kNotInserted. For an arrived
  // message that exists only in a scratch buffer: copied to a packet only
  // when no receive waits for it.
  void* insert_lazy(const match_key_t& key, type_t type, void* (*make)(void*),
                    void* ctx);
  static inline void* const kNotInserted = reinterpret_cast<void*>(1);
  void* insert(int rank, tag_t tag, matching_policy_t policy, void* value,
               type_t type)
  {
    return insert(key(rank, tag, policy), value, type);
  }

  // Withdraws one waiting entry (the oldest with this key, value and type);
  // false if it is not waiting (already matched, or never inserted). For a
  // receive abandoned by its poster (e.g. a blocking receive interrupted by
  // an exception), so that no later send completes it.
  bool remove(const match_key_t& key, void* value, type_t type);

  // Removes every waiting entry, calling f(value, type) on each (per key in
  // FIFO order) under the bucket's lock: f must not throw or use the engine.
  // Concurrent inserts are safe but may or may not be seen.
  template <typename F>
  void clear(F f)
  {
    clear_impl(
        [](void* ctx, void* v, type_t t) { (*static_cast<F*>(ctx))(v, t); },
        &f);
  }

  // Calls f(key, value, type) on every waiting entry, under its bucket's
  // lock, without removing it: f must not throw or use the engine (collect,
  // then remove() what should go). Concurrent inserts may or may not be seen.
  template <typename F>
  void for_each_entry(F f)
  {
    for_each_impl([](void* ctx, const match_key_t& k, void* v,
                     type_t t) { (*static_cast<F*>(ctx))(k, v, t); },
                  &f);
  }

  // Replaces the value of every waiting entry of `type` by f(value) (f may
  // return value itself), each under its bucket's lock: f must not throw or
  // use the engine. Concurrent inserts are safe but may or may not be seen.
  // A rare-path scan of every bucket (progress.cpp release_held_packets).
  template <typename F>
  void replace_values(type_t type, F f)
  {
    replace_impl(
        type, [](void* ctx, void* v) { return (*static_cast<F*>(ctx))(v); },
        &f);
  }

  // Entries (sends and receives) waiting now: locks each non-empty bucket
  // in turn, so exact only when no thread inserts meanwhile (introspection
  // for tests: a leak check).
  size_t count_entries();

  // Number of overflow nodes allocated so far (a test and tuning aid).
  size_t overflow_nodes_allocated() const;

  matching_engine_attr_t attr;
  runtime_impl_t* runtime = nullptr;
  uint32_t index = 0;  // its number in the runtime, carried by sends
  make_key_fn_t make_key_fn = nullptr;
  // collectives posted on this engine so far: the sequence number that
  // keeps the tags of successive collectives apart (src/coll)
  std::atomic<uint64_t> coll_seq{0};

 private:
  template <typename Make>
  void* insert_impl(const match_key_t& key, type_t type, Make make);
  template <typename Make>
  void* insert_locked(size_t i, uint32_t word, const match_key_t& key,
                      type_t type, Make make);
  struct node_t {
    uint64_t hi;
    int32_t lo;
    type_t type;
    node_t* next;
    void* value;
  };
  static_assert(sizeof(node_t) == 32, "an overflow node is 32 bytes");

  struct alignas(64) bucket_t {
    // No initializers: a zero-filled bucket is an empty, unlocked bucket,
    // and the table comes from calloc (pages untouched until used).
    std::atomic<uint32_t> word;
    int32_t lo[3];
    uint64_t hi[3];
    void* first[3];
  };
  static_assert(sizeof(bucket_t) == 64, "a bucket is one cache line");

  struct alignas(64) ext_t {
    void* second[3];
    node_t* tail[3];
    node_t* last;
    node_t* spare;
  };
  static_assert(sizeof(ext_t) == 64, "a bucket extension is one line");

  // Returns the bucket's word with the lock bit set (the state is in it).
  static uint32_t lock_bucket(bucket_t& b);
  // Publishes the new state (lock bit clear) and releases the lock.
  static void unlock_bucket(bucket_t& b, uint32_t word)
  {
    b.word.store(word & ~kLocked, std::memory_order_release);
  }
  static constexpr uint32_t kLocked = 1u;
  static constexpr uint32_t kOverflow = 2u;
  // the overflow bit and the three slots' counts: zero when no entry waits
  // (a slot's type bit outlives its entries)
  static constexpr uint32_t kEntryBits = 0x36Eu;

  node_t* get_node();
  void put_node(node_t* n);
  void pop_front(bucket_t& b, ext_t& e, uint32_t& word, int s);
  void refill_second(ext_t& e, uint32_t& word, int s);
  node_t* take_node(ext_t& e, uint32_t& word);
  void drop_node(ext_t& e, uint32_t& word, node_t* n);
  void clear_impl(void (*f)(void*, void*, type_t), void* ctx);
  void for_each_impl(void (*f)(void*, const match_key_t&, void*, type_t),
                     void* ctx);
  void replace_impl(type_t type, void* (*f)(void*, void*), void* ctx);

  bucket_t* buckets_ = nullptr;
  ext_t* ext_ = nullptr;
  void* table_mem_ = nullptr;  // what calloc returned (buckets_, ext_ inside)
  size_t mask_ = 0;
  unsigned shift_ = 63;  // the hash's top bits index the table

  // Overflow node pool: a free list refilled by chunks; its own line.
  struct alignas(64) pool_t {
    util::spinlock_t lock;
    node_t* free = nullptr;
    std::vector<node_t*> chunks;
  };
  pool_t pool_;
};

}  // namespace lci

#endif  // LCI_RESOURCE_MATCHING_ENGINE_HPP
