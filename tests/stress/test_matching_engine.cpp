// The matching engine's hash table (src/resource/matching_engine.*): the
// semantics on one thread (against a reference model, in buckets shared by
// many keys), then 8 threads matching millions of pairs on distinct and on
// shared keys.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "resource/matching_engine.hpp"

namespace
{

using lci::match_key_t;
using lci::matching_policy_t;
using engine_t = lci::matching_engine_impl_t;
using type_t = engine_t::type_t;

lci::matching_engine_attr_t attr_with(size_t num_buckets)
{
  lci::matching_engine_attr_t a;
  a.num_buckets = num_buckets;
  return a;
}

void* V(uintptr_t x) { return reinterpret_cast<void*>(x); }
uintptr_t U(void* p) { return reinterpret_cast<uintptr_t>(p); }

// Every entry still waiting, in the order clear() reports them.
std::vector<std::pair<void*, type_t>> drain(engine_t& me)
{
  std::vector<std::pair<void*, type_t>> out;
  me.clear([&](void* v, type_t t) { out.emplace_back(v, t); });
  return out;
}

const matching_policy_t kPolicies[] = {
    matching_policy_t::none, matching_policy_t::rank_only,
    matching_policy_t::tag_only, matching_policy_t::rank_tag};

TEST(MatchingEngine, SendThenRecv)
{
  engine_t me(attr_with(65536));
  auto k = engine_t::make_key(3, 42, matching_policy_t::rank_tag);
  EXPECT_EQ(me.insert(k, V(1), type_t::send), nullptr);
  EXPECT_EQ(me.insert(k, V(2), type_t::recv), V(1));
  EXPECT_TRUE(drain(me).empty());
  EXPECT_EQ(me.overflow_nodes_allocated(), 0u);
}

TEST(MatchingEngine, RecvThenSend)
{
  engine_t me(attr_with(65536));
  auto k = engine_t::make_key(0, 7, matching_policy_t::rank_tag);
  EXPECT_EQ(me.insert(k, V(10), type_t::recv), nullptr);
  EXPECT_EQ(me.insert(k, V(11), type_t::send), V(10));
  EXPECT_TRUE(drain(me).empty());
}

TEST(MatchingEngine, DifferentKeysDoNotMatch)
{
  engine_t me(attr_with(65536));
  auto k1 = engine_t::make_key(1, 5, matching_policy_t::rank_tag);
  auto k2 = engine_t::make_key(2, 5, matching_policy_t::rank_tag);
  auto k3 = engine_t::make_key(1, 6, matching_policy_t::rank_tag);
  EXPECT_EQ(me.insert(k1, V(1), type_t::send), nullptr);
  EXPECT_EQ(me.insert(k2, V(2), type_t::recv), nullptr);
  EXPECT_EQ(me.insert(k3, V(3), type_t::recv), nullptr);
  EXPECT_EQ(me.insert(k1, V(4), type_t::recv), V(1));
  EXPECT_EQ(me.insert(k2, V(5), type_t::send), V(2));
  EXPECT_EQ(me.insert(k3, V(6), type_t::send), V(3));
  EXPECT_TRUE(drain(me).empty());
}

// Many entries under one key: the fixed arrays, then the overflow list.
TEST(MatchingEngine, FifoPerKeyWithManyEntries)
{
  for (type_t first : {type_t::send, type_t::recv}) {
    type_t second = first == type_t::send ? type_t::recv : type_t::send;
    engine_t me(attr_with(1024));
    auto k = engine_t::make_key(9, 1234, matching_policy_t::rank_tag);
    const uintptr_t n = 20000;
    for (uintptr_t i = 1; i <= n; ++i)
      ASSERT_EQ(me.insert(k, V(i), first), nullptr);
    EXPECT_GT(me.overflow_nodes_allocated(), 0u);
    // Half out, more in, then everything out: still oldest first.
    for (uintptr_t i = 1; i <= n / 2; ++i)
      ASSERT_EQ(me.insert(k, V(1000000 + i), second), V(i));
    for (uintptr_t i = n + 1; i <= n + 5; ++i)
      ASSERT_EQ(me.insert(k, V(i), first), nullptr);
    for (uintptr_t i = n / 2 + 1; i <= n + 5; ++i)
      ASSERT_EQ(me.insert(k, V(2000000 + i), second), V(i));
    EXPECT_TRUE(drain(me).empty());
    // The other direction now works on the same (empty) key.
    EXPECT_EQ(me.insert(k, V(7), second), nullptr);
    EXPECT_EQ(me.insert(k, V(8), first), V(7));
  }
}

// Small queue depths, one at a time: 1, 2, 3 entries and back.
TEST(MatchingEngine, FifoAcrossInlineAndOverflow)
{
  engine_t me(attr_with(1));
  auto k = engine_t::make_key(1, 1, matching_policy_t::rank_tag);
  for (uintptr_t depth = 1; depth <= 6; ++depth) {
    for (uintptr_t i = 1; i <= depth; ++i)
      ASSERT_EQ(me.insert(k, V(i), type_t::send), nullptr);
    ASSERT_EQ(me.insert(k, V(100), type_t::recv), V(1));
    ASSERT_EQ(me.insert(k, V(depth + 1), type_t::send), nullptr);
    for (uintptr_t i = 2; i <= depth + 1; ++i)
      ASSERT_EQ(me.insert(k, V(100 + i), type_t::recv), V(i)) << depth;
    ASSERT_TRUE(drain(me).empty());
  }
}

TEST(MatchingEngine, PoliciesNeverMatchEachOther)
{
  const std::pair<int, lci::tag_t> values[] = {
      {0, 0}, {5, 5}, {1, 0}, {0, 1}, {7, 123456789}, {0x7fffffff, ~0ull - 1}};
  for (auto rv : values)
    for (auto p : kPolicies)
      for (auto q : kPolicies) {
        if (p == q) continue;
        engine_t me(attr_with(1));  // every key in one bucket
        auto kp = engine_t::make_key(rv.first, rv.second, p);
        auto kq = engine_t::make_key(rv.first, rv.second, q);
        EXPECT_FALSE(kp == kq);
        EXPECT_EQ(me.insert(kp, V(1), type_t::send), nullptr);
        EXPECT_EQ(me.insert(kq, V(2), type_t::recv), nullptr)
            << "policy " << int(p) << " matched policy " << int(q);
        EXPECT_EQ(drain(me).size(), 2u);
      }
  // Across values too: rank_only(rank 5) vs tag_only(tag 5), none vs the
  // (0, 0) of the others.
  engine_t me(attr_with(1));
  EXPECT_EQ(me.insert(engine_t::make_key(5, 9, matching_policy_t::rank_only),
                      V(1), type_t::send),
            nullptr);
  EXPECT_EQ(me.insert(engine_t::make_key(9, 5, matching_policy_t::tag_only),
                      V(2), type_t::recv),
            nullptr);
  EXPECT_EQ(me.insert(engine_t::make_key(0, 0, matching_policy_t::rank_tag),
                      V(3), type_t::recv),
            nullptr);
  EXPECT_EQ(me.insert(engine_t::make_key(3, 4, matching_policy_t::none), V(4),
                      type_t::send),
            nullptr);
  EXPECT_EQ(drain(me).size(), 4u);
}

// A policy ignores what it does not use.
TEST(MatchingEngine, PoliciesIgnoreUnusedFields)
{
  engine_t me(attr_with(64));
  using P = matching_policy_t;
  EXPECT_EQ(
      me.insert(engine_t::make_key(4, 1, P::rank_only), V(1), type_t::send),
      nullptr);
  EXPECT_EQ(
      me.insert(engine_t::make_key(4, 2, P::rank_only), V(2), type_t::recv),
      V(1));
  EXPECT_EQ(
      me.insert(engine_t::make_key(1, 8, P::tag_only), V(3), type_t::send),
      nullptr);
  EXPECT_EQ(
      me.insert(engine_t::make_key(2, 8, P::tag_only), V(4), type_t::recv),
      V(3));
  EXPECT_EQ(me.insert(engine_t::make_key(1, 8, P::none), V(5), type_t::recv),
            nullptr);
  EXPECT_EQ(me.insert(engine_t::make_key(6, 9, P::none), V(6), type_t::send),
            V(5));
  EXPECT_TRUE(drain(me).empty());
}

// More than three keys per bucket, checked step by step against a model;
// remove() withdraws entries from anywhere in a queue.
TEST(MatchingEngine, CollidingKeysAgainstModel)
{
  for (size_t nb : {1, 2}) {
    engine_t me(attr_with(nb));
    std::vector<match_key_t> keys;
    for (int r = 0; r < 4; ++r)
      for (lci::tag_t t = 0; t < 3; ++t)
        keys.push_back(engine_t::make_key(r, t, matching_policy_t::rank_tag));
    keys.push_back(engine_t::make_key(2, 0, matching_policy_t::rank_only));
    keys.push_back(engine_t::make_key(0, 2, matching_policy_t::tag_only));
    keys.push_back(engine_t::make_key(0, 0, matching_policy_t::none));
    std::map<std::pair<uint64_t, int32_t>,
             std::deque<std::pair<uintptr_t, type_t>>>
        model;
    std::mt19937_64 rng(12345 + nb);
    uintptr_t next = 1;
    const int steps = 200000;
    for (int step = 0; step < steps; ++step) {
      // Phases biased to one type build long queues, then drain them.
      int phase = (step / 5000) % 3;
      unsigned roll = rng() % 100;
      type_t t = phase == 0   ? (roll < 70 ? type_t::send : type_t::recv)
                 : phase == 1 ? (roll < 30 ? type_t::send : type_t::recv)
                              : (roll < 50 ? type_t::send : type_t::recv);
      // A skewed choice of keys: some hot, some rare.
      size_t ki = (rng() % 4 == 0) ? rng() % keys.size() : rng() % 5;
      const match_key_t& k = keys[ki];
      auto& q = model[{k.hi, k.lo}];
      if (rng() % 16 == 0) {  // withdraw a waiting entry, or a bogus one
        if (q.empty() || rng() % 4 == 0) {
          ASSERT_FALSE(me.remove(k, V(next + 1000000), type_t::send));
          ASSERT_FALSE(me.remove(k, V(next + 1000000), type_t::recv));
        } else {
          size_t at = rng() % q.size();
          type_t other =
              q[at].second == type_t::send ? type_t::recv : type_t::send;
          ASSERT_FALSE(me.remove(k, V(q[at].first), other));
          ASSERT_TRUE(me.remove(k, V(q[at].first), q[at].second))
              << "step " << step;
          ASSERT_FALSE(me.remove(k, V(q[at].first), q[at].second));
          q.erase(q.begin() + static_cast<long>(at));
        }
        continue;
      }
      uintptr_t v = next++;
      void* got = me.insert(k, V(v), t);
      if (!q.empty() && q.front().second != t) {
        ASSERT_EQ(U(got), q.front().first) << "step " << step;
        q.pop_front();
      } else {
        ASSERT_EQ(got, nullptr) << "step " << step;
        q.emplace_back(v, t);
      }
    }
    // clear() reports every waiting entry, each key's oldest first.
    std::map<uintptr_t, std::pair<uint64_t, int32_t>> key_of;
    size_t waiting = 0;
    for (auto& kv : model) {
      waiting += kv.second.size();
      for (auto& e : kv.second) key_of[e.first] = kv.first;
    }
    auto left = drain(me);
    ASSERT_EQ(left.size(), waiting);
    std::map<std::pair<uint64_t, int32_t>,
             std::deque<std::pair<uintptr_t, type_t>>>
        seen;
    for (auto& e : left) {
      auto it = key_of.find(U(e.first));
      ASSERT_NE(it, key_of.end());
      seen[it->second].emplace_back(U(e.first), e.second);
    }
    for (auto& kv : model)
      if (!kv.second.empty()) {
        EXPECT_EQ(seen[kv.first], kv.second);
      }
    EXPECT_TRUE(drain(me).empty());
  }
}

TEST(MatchingEngine, RemoveWithdrawsAnAbandonedReceive)
{
  engine_t me(attr_with(65536));
  auto k = engine_t::make_key(0, 77, matching_policy_t::rank_tag);
  EXPECT_EQ(me.insert(k, V(1), type_t::recv), nullptr);
  EXPECT_TRUE(me.remove(k, V(1), type_t::recv));
  EXPECT_FALSE(me.remove(k, V(1), type_t::recv));
  EXPECT_EQ(me.insert(k, V(2), type_t::send), nullptr);  // not matched
  EXPECT_EQ(me.insert(k, V(3), type_t::recv), V(2));
  EXPECT_TRUE(drain(me).empty());
}

TEST(MatchingEngine, ClearReturnsEveryEntry)
{
  engine_t me(attr_with(2));
  std::map<uintptr_t, type_t> inserted;
  uintptr_t v = 1;
  for (int key = 0; key < 9; ++key) {
    auto k = engine_t::make_key(key, 77, matching_policy_t::rank_tag);
    type_t t = key % 2 ? type_t::send : type_t::recv;
    for (int j = 0; j <= key; ++j) {  // 1 to 9 entries per key
      ASSERT_EQ(me.insert(k, V(v), t), nullptr);
      inserted[v++] = t;
    }
  }
  auto left = drain(me);
  ASSERT_EQ(left.size(), inserted.size());
  std::map<uintptr_t, type_t> got;
  for (auto& e : left) EXPECT_TRUE(got.emplace(U(e.first), e.second).second);
  EXPECT_EQ(got, inserted);
  EXPECT_TRUE(drain(me).empty());
  // The engine is as new: nodes went back to the pool and are reused.
  size_t nodes = me.overflow_nodes_allocated();
  auto k = engine_t::make_key(0, 77, matching_policy_t::rank_tag);
  for (uintptr_t i = 1; i <= 20; ++i)
    EXPECT_EQ(me.insert(k, V(i), type_t::send), nullptr);
  EXPECT_EQ(me.overflow_nodes_allocated(), nodes);
  for (uintptr_t i = 1; i <= 20; ++i)
    EXPECT_EQ(me.insert(k, V(100 + i), type_t::recv), V(i));
  EXPECT_TRUE(drain(me).empty());
}

// One entry per key at a time: the fixed arrays only, no overflow node.
TEST(MatchingEngine, LowLoadAllocatesNothing)
{
  engine_t me(attr_with(65536));
  for (int r = 0; r < 64; ++r)
    for (lci::tag_t t = 0; t < 256; ++t) {
      auto k = engine_t::make_key(r, t, matching_policy_t::rank_tag);
      ASSERT_EQ(me.insert(k, V(1 + t), type_t::recv), nullptr);
    }
  for (int r = 0; r < 64; ++r)
    for (lci::tag_t t = 0; t < 256; ++t) {
      auto k = engine_t::make_key(r, t, matching_policy_t::rank_tag);
      ASSERT_EQ(me.insert(k, V(9), type_t::send), V(1 + t));
    }
  // 16,384 keys in 65,536 buckets: a few buckets get a fourth key, but
  // never enough to need more than one chunk of nodes.
  EXPECT_LE(me.overflow_nodes_allocated(), 256u);
  EXPECT_TRUE(drain(me).empty());
}

lci::matching_entry_key_t by_tag_parity(int, lci::tag_t tag, matching_policy_t)
{
  return tag % 2;
}

TEST(MatchingEngine, PluggableMakeKey)
{
  engine_t me(attr_with(16));
  EXPECT_EQ(me.make_key_fn, nullptr);
  // Unset: the default key.
  EXPECT_EQ(me.insert(1, 2, matching_policy_t::rank_tag, V(1), type_t::send),
            nullptr);
  EXPECT_EQ(me.insert(1, 4, matching_policy_t::rank_tag, V(2), type_t::recv),
            nullptr);
  EXPECT_EQ(drain(me).size(), 2u);
  me.make_key_fn = &by_tag_parity;
  EXPECT_TRUE(me.key(1, 3, matching_policy_t::rank_tag) ==
              (match_key_t{1, engine_t::kUser}));
  EXPECT_EQ(me.insert(1, 2, matching_policy_t::rank_tag, V(3), type_t::send),
            nullptr);
  EXPECT_EQ(me.insert(5, 4, matching_policy_t::tag_only, V(4), type_t::recv),
            V(3));
  EXPECT_EQ(me.insert(1, 3, matching_policy_t::rank_tag, V(5), type_t::send),
            nullptr);
  EXPECT_EQ(me.insert(1, 2, matching_policy_t::rank_tag, V(6), type_t::recv),
            nullptr);
  EXPECT_EQ(drain(me).size(), 2u);
}

TEST(MatchingEngine, BucketCountMustBeAPowerOfTwo)
{
  EXPECT_THROW(engine_t(attr_with(0)), lci::fatal_error);
  EXPECT_THROW(engine_t(attr_with(3)), lci::fatal_error);
  EXPECT_THROW(engine_t(attr_with(65535)), lci::fatal_error);
  EXPECT_NO_THROW(engine_t(attr_with(1)));
}

// ---- many threads -------------------------------------------------------

constexpr int kThreads = 8;
// Pairs per thread: 8 x 250,000 = 2 million pairs (4 million inserts) per
// engine, also under ThreadSanitizer (about 15 s there).
constexpr long kPairs = 250000;

// A value names (thread, pair, type); never null.
uintptr_t value_of(int t, long i, type_t ty)
{
  return ((static_cast<uintptr_t>(t) << 40) | (static_cast<uintptr_t>(i) << 1) |
          static_cast<uintptr_t>(ty)) +
         1;
}
void split(uintptr_t v, int* t, long* i, type_t* ty)
{
  v -= 1;
  *t = static_cast<int>(v >> 40);
  *i = static_cast<long>((v & ((uintptr_t(1) << 40) - 1)) >> 1);
  *ty = static_cast<type_t>(v & 1);
}

struct ledger_t {
  std::vector<std::atomic<uint8_t>> marks;  // per (thread, pair, type)
  ledger_t() : marks(static_cast<size_t>(kThreads) * kPairs * 2) {}
  std::atomic<uint8_t>& at(uintptr_t v)
  {
    int t;
    long i;
    type_t ty;
    split(v, &t, &i, &ty);
    return marks[(static_cast<size_t>(t) * kPairs + i) * 2 +
                 static_cast<size_t>(ty)];
  }
};

// Distinct keys: thread t uses rank t only, so every match is predictable:
// each round inserts 16 entries of one type on 5 keys (queues of 3 or 4, so
// the overflow path too), then their 16 partners.
TEST(MatchingEngineThreads, DistinctKeysEveryValueMatchedOnce)
{
  for (size_t nb : {size_t(65536), size_t(64)}) {
    engine_t me(attr_with(nb));
    std::atomic<long> errors{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; ++t)
      ts.emplace_back([&, t] {
        const int kRound = 16;
        long errs = 0;
        for (long base = 0; base + kRound <= kPairs; base += kRound) {
          type_t first = (base / kRound + t) % 2 ? type_t::send : type_t::recv;
          type_t second = first == type_t::send ? type_t::recv : type_t::send;
          lci::tag_t tag0 = static_cast<lci::tag_t>(base % 1000);
          for (long j = 0; j < kRound; ++j) {
            auto k = engine_t::make_key(t, tag0 + j % 5,
                                        matching_policy_t::rank_tag);
            if (me.insert(k, V(value_of(t, base + j, first)), first)) ++errs;
          }
          for (long j = 0; j < kRound; ++j) {
            auto k = engine_t::make_key(t, tag0 + j % 5,
                                        matching_policy_t::rank_tag);
            void* got = me.insert(k, V(value_of(t, base + j, second)), second);
            if (U(got) != value_of(t, base + j, first)) ++errs;
          }
        }
        // And plain pairs (one entry per key) to finish.
        for (long i = 0; i < 1000; ++i) {
          auto k = engine_t::make_key(t, 5000 + i, matching_policy_t::rank_tag);
          if (me.insert(k, V(1), type_t::send)) ++errs;
          if (me.insert(k, V(2), type_t::recv) != V(1)) ++errs;
        }
        errors.fetch_add(errs);
      });
    for (auto& th : ts) th.join();
    EXPECT_EQ(errors.load(), 0) << nb << " buckets";
    EXPECT_TRUE(drain(me).empty()) << nb << " buckets";
  }
}

// Shared keys: every thread inserts pairs (send + receive on one key) over
// the same few keys, half of them receive first. Each insert either waits
// or returns a partner of the complementary type under the same key; in
// the end every value was matched exactly once and nothing is left.
TEST(MatchingEngineThreads, SharedKeysEveryValueMatchedOnce)
{
  for (size_t nb : {size_t(65536), size_t(2)}) {
    engine_t me(attr_with(nb));
    const int kKeys = 7;
    auto key_of_pair = [](int t, long i) {
      int k = static_cast<int>((i * 7 + t * 3) % kKeys);
      return engine_t::make_key(k % 3, static_cast<lci::tag_t>(k),
                                matching_policy_t::rank_tag);
    };
    ledger_t ledger;
    std::atomic<long> errors{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; ++t)
      ts.emplace_back([&, t] {
        long errs = 0;
        auto one = [&](long i, type_t ty) {
          match_key_t k = key_of_pair(t, i);
          uintptr_t mine = value_of(t, i, ty);
          void* got = me.insert(k, V(mine), ty);
          if (!got) return;
          int pt;
          long pi;
          type_t pty;
          split(U(got), &pt, &pi, &pty);
          if (pt < 0 || pt >= kThreads || pi < 0 || pi >= kPairs) {
            ++errs;
            return;
          }
          if (pty == ty || !(key_of_pair(pt, pi) == k)) ++errs;
          if (ledger.at(U(got)).fetch_add(1) != 0) ++errs;
          if (ledger.at(mine).fetch_add(1) != 0) ++errs;
        };
        for (long i = 0; i < kPairs; ++i) {
          bool recv_first = (t + i / 64) % 2;
          one(i, recv_first ? type_t::recv : type_t::send);
          one(i, recv_first ? type_t::send : type_t::recv);
        }
        errors.fetch_add(errs);
      });
    for (auto& th : ts) th.join();
    EXPECT_EQ(errors.load(), 0) << nb << " buckets";
    auto left = drain(me);
    EXPECT_TRUE(left.empty())
        << left.size() << " entries left, " << nb << " buckets";
    size_t unmatched = 0;
    for (auto& m : ledger.marks)
      if (m.load() != 1) ++unmatched;
    EXPECT_EQ(unmatched, 0u) << nb << " buckets";
  }
}

}  // namespace

// for_each_entry (peer failure: withdraw the receives of a dead rank) sees
// every waiting entry with its key and type, inline and in the overflow
// lists, and leaves them in place; remove() of what it reported works.
TEST(MatchingEngine, ForEachEntrySeesEveryEntryWithItsKey)
{
  engine_t me(attr_with(2));  // few buckets: keys share them, lists grow
  std::map<uintptr_t, std::pair<int, type_t>> inserted;  // value -> rank
  uintptr_t v = 1;
  for (int rank = 0; rank < 9; ++rank) {
    auto k = engine_t::make_key(rank, 5, matching_policy_t::rank_tag);
    type_t t = rank % 3 ? type_t::recv : type_t::send;
    for (int j = 0; j <= rank; ++j) {
      ASSERT_EQ(me.insert(k, V(v), t), nullptr);
      inserted[v++] = {rank, t};
    }
  }
  std::map<uintptr_t, std::pair<int, type_t>> seen;
  std::vector<std::pair<match_key_t, void*>> rank4;
  me.for_each_entry([&](const match_key_t& k, void* val, type_t t) {
    EXPECT_TRUE(seen.emplace(U(val), std::make_pair(k.lo, t)).second);
    if (k.lo == 4 && t == type_t::recv) rank4.emplace_back(k, val);
  });
  EXPECT_EQ(seen, inserted);
  EXPECT_EQ(me.count_entries(), inserted.size());  // nothing removed
  ASSERT_EQ(rank4.size(), 5u);
  for (auto& e : rank4) EXPECT_TRUE(me.remove(e.first, e.second, type_t::recv));
  EXPECT_EQ(me.count_entries(), inserted.size() - 5);
  size_t left = 0;
  me.for_each_entry([&](const match_key_t& k, void*, type_t) {
    EXPECT_NE(k.lo, 4);
    ++left;
  });
  EXPECT_EQ(left, inserted.size() - 5);
}

// One bucket: keys 0-2 take the three slots (their third and later entries
// in each slot's own list), keys 3-4 arrive with the slots taken and wait in
// the shared list. Inserts interleave the keys, a withdrawal takes entries
// out of the middle of each kind of list, and every key still matches
// oldest first; clear() then reports each key's rest in order.
TEST(MatchingEngine, SlotListsAndSharedListKeepEachKeyInOrder)
{
  engine_t me(attr_with(1));
  const int nkeys = 5;
  auto key = [](int k) {
    return engine_t::make_key(k, 3, matching_policy_t::rank_tag);
  };
  std::vector<std::deque<uintptr_t>> q(nkeys);
  uintptr_t v = 1;
  for (int round = 0; round < 8; ++round)
    for (int k = 0; k < nkeys; ++k) {
      ASSERT_EQ(me.insert(key(k), V(v), type_t::recv), nullptr);
      q[k].push_back(v++);
    }
  EXPECT_EQ(me.count_entries(), size_t(nkeys * 8));
  // the fifth entry of every key: in a slot's list for 0-2, shared for 3-4
  for (int k = 0; k < nkeys; ++k) {
    uintptr_t gone = q[k][4];
    EXPECT_FALSE(me.remove(key(k), V(gone), type_t::send));
    EXPECT_TRUE(me.remove(key(k), V(gone), type_t::recv));
    EXPECT_FALSE(me.remove(key(k), V(gone), type_t::recv));
    q[k].erase(q[k].begin() + 4);
  }
  // matches in reverse key order, three per key, then one more entry each
  for (int k = nkeys - 1; k >= 0; --k)
    for (int j = 0; j < 3; ++j) {
      ASSERT_EQ(U(me.insert(key(k), V(1000 + v++), type_t::send)), q[k].front())
          << "key " << k;
      q[k].pop_front();
    }
  for (int k = 0; k < nkeys; ++k) {
    ASSERT_EQ(me.insert(key(k), V(v), type_t::recv), nullptr);
    q[k].push_back(v++);
  }
  // every waiting entry, each key's oldest first
  std::map<int, std::deque<uintptr_t>> seen;
  std::map<uintptr_t, int> key_of;
  for (int k = 0; k < nkeys; ++k)
    for (uintptr_t x : q[k]) key_of[x] = k;
  for (auto& e : drain(me)) {
    ASSERT_EQ(e.second, type_t::recv);
    ASSERT_EQ(key_of.count(U(e.first)), 1u);
    seen[key_of[U(e.first)]].push_back(U(e.first));
  }
  for (int k = 0; k < nkeys; ++k) EXPECT_EQ(seen[k], q[k]) << "key " << k;
  EXPECT_EQ(me.count_entries(), 0u);
}

// replace_values reaches every entry of the given type, inline, in a slot's
// own list and in the shared list, and no entry of the other type.
TEST(MatchingEngine, ReplaceValuesReachesEveryEntryOfItsType)
{
  engine_t me(attr_with(1));
  std::map<uintptr_t, type_t> inserted;
  uintptr_t v = 1;
  for (int k = 0; k < 6; ++k) {  // keys 3-5 in the shared list
    type_t t = k % 2 ? type_t::send : type_t::recv;
    auto key = engine_t::make_key(k, 1, matching_policy_t::rank_tag);
    for (int j = 0; j < 5; ++j) {
      ASSERT_EQ(me.insert(key, V(v), t), nullptr);
      inserted[v++] = t;
    }
  }
  me.replace_values(type_t::send, [](void* x) { return V(U(x) + 100000); });
  std::map<uintptr_t, type_t> expect;
  for (auto& e : inserted)
    expect[e.second == type_t::send ? e.first + 100000 : e.first] = e.second;
  std::map<uintptr_t, type_t> got;
  for (auto& e : drain(me)) got[U(e.first)] = e.second;
  EXPECT_EQ(got, expect);
}
