// The packet pool (src/resource/packet_pool.*): per-thread deques with work
// stealing. Many threads getting and putting at once, producer/consumer
// pairs (one thread gets, another puts), stealing in an exhausted pool,
// threads that exit holding packets, several pools at once.
//
// Invariants checked everywhere: a packet is never handed out twice at once
// (each packet carries an atomic owner mark in its data, set with an
// exchange on get and cleared on put), none is lost (count_free() ==
// npackets at the end, and one thread can then get them all), and get()
// never blocks (it returns, nullptr when empty, in bounded time).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <new>
#include <random>
#include <thread>
#include <vector>

#include "resource/packet_pool.hpp"
#include "tsan.hpp"

namespace
{

using lci::packet_t;
using pool_t = lci::packet_pool_impl_t;

// ThreadSanitizer runs these loops several times slower: halve the counts.
long scaled(long n) { return kTsan ? n / 2 : n; }

lci::packet_pool_attr_t attr_with(size_t npackets, size_t packet_size = 64)
{
  lci::packet_pool_attr_t a;
  a.packet_size = packet_size;
  a.npackets = npackets;
  return a;
}

// The owner mark lives in the packet's data (the pool never touches it).
std::atomic<int>& mark(packet_t* p)
{
  return *std::launder(reinterpret_cast<std::atomic<int>*>(p->data()));
}

// Takes every packet out on this thread, installs the marks, puts them back;
// checks the pool starts full.
void init_marks(pool_t& pool)
{
  const size_t n = pool.attr.npackets;
  ASSERT_EQ(pool.count_free(), n);
  std::vector<packet_t*> all;
  while (packet_t* p = pool.get()) all.push_back(p);
  ASSERT_EQ(all.size(), n);
  std::sort(all.begin(), all.end());
  ASSERT_EQ(std::unique(all.begin(), all.end()), all.end());
  for (packet_t* p : all) {
    ASSERT_EQ(p->pool, &pool);
    new (p->data()) std::atomic<int>(0);
    pool_t::put(p);
  }
  ASSERT_EQ(pool.count_free(), n);
}

// Marks p as held by `who` (> 0); fails if someone else holds it.
bool take(packet_t* p, int who)
{
  return mark(p).exchange(who, std::memory_order_acq_rel) == 0;
}
bool give(packet_t* p, int who)
{
  return mark(p).exchange(0, std::memory_order_acq_rel) == who;
}

// After a test: nothing lost, nothing duplicated, nothing still marked.
void expect_all_back(pool_t& pool)
{
  const size_t n = pool.attr.npackets;
  EXPECT_EQ(pool.count_free(), n);
  std::vector<packet_t*> all;
  // the steal attempt always finds a non-empty deque when only this thread
  // is running, so get() fails only once the pool is empty
  while (packet_t* p = pool.get()) all.push_back(p);
  EXPECT_EQ(all.size(), n);
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::unique(all.begin(), all.end()), all.end());
  for (packet_t* p : all) {
    EXPECT_EQ(mark(p).load(), 0);
    pool_t::put(p);
  }
  EXPECT_EQ(pool.count_free(), n);
}

// get() with its duration, to check that it never waits.
struct timed_get_t {
  std::chrono::nanoseconds worst{0};
  packet_t* operator()(pool_t& pool)
  {
    auto t0 = std::chrono::steady_clock::now();
    packet_t* p = pool.get();
    auto dt = std::chrono::steady_clock::now() - t0;
    if (dt > worst) worst = dt;
    return p;
  }
};
// Generous: a get may spin while a preempted thief holds its deque's lock
// (8 threads on 2 cores); it must never wait for a put.
constexpr auto kMaxGet = std::chrono::seconds(2);

// A bounded single-producer single-consumer ring (the hand-off between a
// producer and its consumer thread).
class spsc_t
{
 public:
  explicit spsc_t(size_t cap) : ring_(cap) {}
  bool push(packet_t* p)
  {
    size_t t = tail_.load(std::memory_order_relaxed);
    if (t - head_.load(std::memory_order_acquire) == ring_.size()) return false;
    ring_[t % ring_.size()] = p;
    tail_.store(t + 1, std::memory_order_release);
    return true;
  }
  packet_t* pop()
  {
    size_t h = head_.load(std::memory_order_relaxed);
    if (h == tail_.load(std::memory_order_acquire)) return nullptr;
    packet_t* p = ring_[h % ring_.size()];
    head_.store(h + 1, std::memory_order_release);
    return p;
  }

 private:
  std::vector<packet_t*> ring_;
  alignas(64) std::atomic<size_t> head_{0};
  alignas(64) std::atomic<size_t> tail_{0};
};

TEST(PacketPool, SingleThreadGetsEveryPacketOnceThenNullptr)
{
  pool_t pool(attr_with(1000));
  init_marks(pool);
  std::vector<packet_t*> held;
  while (packet_t* p = pool.get()) {
    ASSERT_TRUE(take(p, 1));
    held.push_back(p);
  }
  EXPECT_EQ(held.size(), 1000u);
  EXPECT_EQ(pool.count_free(), 0u);
  EXPECT_EQ(pool.get(), nullptr);
  // last in, first out on the local deque
  packet_t* last = held.back();
  ASSERT_TRUE(give(last, 1));
  pool_t::put(last);
  EXPECT_EQ(pool.get(), last);
  pool_t::put(last);
  held.pop_back();
  for (packet_t* p : held) {
    ASSERT_TRUE(give(p, 1));
    pool_t::put(p);
  }
  expect_all_back(pool);
  // one live thread: the overflow threshold is the whole pool
  EXPECT_EQ(pool.threshold(), 1000u);
}

// 8 threads, each holding up to 16 packets, randomly getting and putting.
TEST(PacketPoolThreads, EightThreadsGetPutMix)
{
  constexpr int kThreads = 8;
  const long iters = scaled(400000);  // per thread: 3.2M get or put in all
  pool_t pool(attr_with(256));
  init_marks(pool);
  std::atomic<long> errors{0}, gets{0}, empties{0};
  std::atomic<int64_t> worst_ns{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      const int me = t + 1;
      std::minstd_rand rng(t * 7919 + 1);
      std::vector<packet_t*> held;
      timed_get_t tget;
      long ngets = 0, nempty = 0, nerr = 0;
      for (long i = 0; i < iters; ++i) {
        bool want_get = held.empty() || (held.size() < 16 && (rng() & 1));
        if (want_get) {
          packet_t* p = tget(pool);
          if (!p) {
            ++nempty;
            continue;
          }
          ++ngets;
          if (p->pool != &pool || !take(p, me)) ++nerr;
          held.push_back(p);
        } else {
          size_t k = rng() % held.size();
          packet_t* p = held[k];
          held[k] = held.back();
          held.pop_back();
          if (!give(p, me)) ++nerr;
          pool_t::put(p);
        }
      }
      for (packet_t* p : held) {
        if (!give(p, me)) ++nerr;
        pool_t::put(p);
      }
      errors += nerr;
      gets += ngets;
      empties += nempty;
      int64_t w = tget.worst.count();
      int64_t cur = worst_ns.load();
      while (w > cur && !worst_ns.compare_exchange_weak(cur, w)) {
      }
    });
  for (auto& th : ts) th.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_GT(gets.load(), iters * kThreads / 4);
  EXPECT_LT(std::chrono::nanoseconds(worst_ns.load()), kMaxGet);
  expect_all_back(pool);
}

// Producer/consumer pairs: the producer gets, the consumer puts, so packets
// keep moving from the consumers' deques back to the producers (through
// the shared deque when a consumer's deque passes the threshold, or by
// stealing).
TEST(PacketPoolThreads, ProducerConsumerPairs)
{
  constexpr int kPairs = 4;
  const long per_pair = scaled(500000);  // 2M packets handed over in all
  pool_t pool(attr_with(512));
  init_marks(pool);
  std::atomic<long> errors{0};
  std::atomic<size_t> max_consumer_deque{0};
  std::vector<std::unique_ptr<spsc_t>> qs;
  for (int i = 0; i < kPairs; ++i) qs.emplace_back(new spsc_t(64));
  std::vector<std::thread> ts;
  for (int i = 0; i < kPairs; ++i) {
    ts.emplace_back([&, i] {  // producer
      const int me = 2 * i + 1;
      long nerr = 0;
      timed_get_t tget;
      for (long n = 0; n < per_pair;) {
        packet_t* p = tget(pool);
        if (!p) {
          std::this_thread::yield();
          continue;
        }
        if (!take(p, me) || !give(p, me) || !take(p, me + 1)) ++nerr;
        while (!qs[i]->push(p)) std::this_thread::yield();
        ++n;
      }
      if (tget.worst >= kMaxGet) ++nerr;
      errors += nerr;
    });
    ts.emplace_back([&, i] {  // consumer
      const int me = 2 * i + 2;
      long nerr = 0;
      size_t worst = 0;
      for (long n = 0; n < per_pair;) {
        packet_t* p = qs[i]->pop();
        if (!p) {
          std::this_thread::yield();
          continue;
        }
        if (!give(p, me)) ++nerr;
        pool_t::put(p);
        worst = std::max(worst, pool.count_local());
        ++n;
      }
      errors += nerr;
      size_t cur = max_consumer_deque.load();
      while (worst > cur &&
             !max_consumer_deque.compare_exchange_weak(cur, worst)) {
      }
    });
  }
  for (auto& th : ts) th.join();
  EXPECT_EQ(errors.load(), 0);
  // after a put, a deque holds at most the threshold: npackets / 2 once
  // the consumer and the main thread are registered, npackets / 9 once all
  // are
  EXPECT_LE(max_consumer_deque.load(), pool.attr.npackets / 2);
  expect_all_back(pool);
}

// The overflow rule, deterministically: with two live threads the threshold
// is npackets / 2; a thread putting every packet keeps at most that many
// and the rest goes to the shared deque, where the other thread finds it.
TEST(PacketPoolThreads, OverflowGoesBackToTheSharedDeque)
{
  const size_t n = 1024;
  pool_t pool(attr_with(n));
  init_marks(pool);  // the main thread is registered: one live thread
  EXPECT_EQ(pool.threshold(), n);
  std::vector<packet_t*> all;
  while (packet_t* p = pool.get()) all.push_back(p);
  ASSERT_EQ(all.size(), n);
  std::atomic<int> phase{0};
  size_t local_after = 0, thr = 0;
  std::thread consumer([&] {
    pool.count_local();  // registers: two live threads
    phase.store(1);
    while (phase.load() != 2) std::this_thread::yield();
    thr = pool.threshold();
    for (packet_t* p : all) pool_t::put(p);
    local_after = pool.count_local();
    phase.store(3);
    while (phase.load() != 4) std::this_thread::yield();
  });
  while (phase.load() != 1) std::this_thread::yield();
  phase.store(2);
  while (phase.load() != 3) std::this_thread::yield();
  EXPECT_EQ(thr, n / 2);
  EXPECT_LE(local_after, thr);
  EXPECT_EQ(pool.count_free(), n);
  // the main thread's deque is empty: its gets come from the shared deque
  // (and by stealing from the consumer once that is empty)
  EXPECT_EQ(pool.count_local(), 0u);
  std::vector<packet_t*> again;
  while (packet_t* p = pool.get()) again.push_back(p);
  EXPECT_EQ(again.size(), n);
  for (packet_t* p : again) pool_t::put(p);
  phase.store(4);
  consumer.join();
  expect_all_back(pool);
}

// An exhausted pool: 8 threads wanting more packets than exist. get()
// returns nullptr instead of waiting, and the packets keep circulating by
// stealing.
TEST(PacketPoolThreads, StealingUnderAnExhaustedPool)
{
  constexpr int kThreads = 8;
  const long iters = scaled(200000);
  pool_t pool(attr_with(24));  // 3 per thread, each wants up to 6
  init_marks(pool);
  std::atomic<long> errors{0}, gets{0}, empties{0};
  std::atomic<bool> slow_get{false};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      const int me = t + 1;
      std::minstd_rand rng(t + 17);
      std::vector<packet_t*> held;
      timed_get_t tget;
      long ngets = 0, nempty = 0, nerr = 0;
      for (long i = 0; i < iters; ++i) {
        if (held.size() < 6 && (held.empty() || rng() % 3 != 0)) {
          packet_t* p = tget(pool);
          if (!p) {
            ++nempty;
            // give something back now and then, so the pool cannot stay
            // exhausted by threads that all wait for a packet
            if (!held.empty() && rng() % 4 == 0) {
              packet_t* q = held.back();
              held.pop_back();
              if (!give(q, me)) ++nerr;
              pool_t::put(q);
            }
            continue;
          }
          ++ngets;
          if (!take(p, me)) ++nerr;
          held.push_back(p);
        } else {
          packet_t* p = held.back();
          held.pop_back();
          if (!give(p, me)) ++nerr;
          pool_t::put(p);
        }
      }
      for (packet_t* p : held) {
        if (!give(p, me)) ++nerr;
        pool_t::put(p);
      }
      errors += nerr;
      gets += ngets;
      empties += nempty;
      if (tget.worst >= kMaxGet) slow_get = true;
    });
  for (auto& th : ts) th.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_FALSE(slow_get.load());
  EXPECT_GT(gets.load(), 0);
  EXPECT_GT(empties.load(), 0);  // it really was exhausted
  expect_all_back(pool);
}

// get() on an empty pool returns at once, however long the holder keeps its
// packets.
TEST(PacketPoolThreads, GetNeverWaitsForAPut)
{
  pool_t pool(attr_with(64));
  std::vector<packet_t*> all;
  while (packet_t* p = pool.get()) all.push_back(p);
  ASSERT_EQ(all.size(), 64u);
  std::atomic<long> nulls{0};
  std::thread other([&] {
    for (int i = 0; i < 100000; ++i)
      if (!pool.get()) ++nulls;
  });
  other.join();  // would hang if get waited for a packet
  EXPECT_EQ(nulls.load(), 100000);
  for (packet_t* p : all) pool_t::put(p);
  EXPECT_EQ(pool.count_free(), 64u);
}

// Threads exit holding packets in their deques: nothing is stranded (their
// packets go to the shared deque) and later threads adopt the deques left
// behind instead of adding new ones.
TEST(PacketPoolThreads, ExitedThreadsStrandNothing)
{
  constexpr int kThreads = 4;
  pool_t pool(attr_with(400));
  init_marks(pool);
  for (int gen = 0; gen < 20; ++gen) {
    std::vector<std::thread> ts;
    std::atomic<long> errors{0};
    for (int t = 0; t < kThreads; ++t)
      ts.emplace_back([&, t] {
        const int me = t + 1;
        std::vector<packet_t*> held;
        for (int i = 0; i < 50; ++i)
          if (packet_t* p = pool.get()) {
            if (!take(p, me)) ++errors;
            held.push_back(p);
          }
        for (packet_t* p : held) {
          if (!give(p, me)) ++errors;
          pool_t::put(p);
        }
        // exits with its packets in its own deque
      });
    for (auto& th : ts) th.join();
    EXPECT_EQ(errors.load(), 0);
    EXPECT_EQ(pool.count_free(), 400u);
    // the shared deque, the main thread's, and at most one per thread
    // alive at once
    EXPECT_LE(pool.count_deques(), 2u + kThreads);
  }
  expect_all_back(pool);
}

// Several pools used by the same threads at once (more pools than the
// thread-local fast table has slots), and pools destroyed while threads
// that used them are still alive.
TEST(PacketPoolThreads, ManyPoolsAtOnce)
{
  constexpr int kPools = 11;
  constexpr int kThreads = 4;
  const long iters = scaled(100000);
  std::vector<std::unique_ptr<pool_t>> pools;
  for (int i = 0; i < kPools; ++i) {
    pools.emplace_back(new pool_t(attr_with(32 + 8 * i)));
    init_marks(*pools.back());
  }
  std::atomic<long> errors{0};
  std::atomic<int> done{0};
  std::atomic<bool> destroyed{false};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      const int me = t + 1;
      std::minstd_rand rng(t + 3);
      std::vector<packet_t*> held;
      long nerr = 0;
      for (long i = 0; i < iters; ++i) {
        if (held.size() < 8 && (held.empty() || rng() & 1)) {
          pool_t& pool = *pools[rng() % kPools];
          packet_t* p = pool.get();
          if (!p) continue;
          if (p->pool != &pool || !take(p, me)) ++nerr;
          held.push_back(p);
        } else {
          size_t k = rng() % held.size();
          packet_t* p = held[k];
          held[k] = held.back();
          held.pop_back();
          if (!give(p, me)) ++nerr;
          pool_t::put(p);
        }
      }
      for (packet_t* p : held) {
        if (!give(p, me)) ++nerr;
        pool_t::put(p);
      }
      errors += nerr;
      // stay alive until the main thread destroyed the pools, then use a
      // fresh pool (a new id in the slot of a dead one), then exit (the
      // exit must skip the dead pools)
      done.fetch_add(1);
      while (!destroyed.load()) std::this_thread::yield();
      pool_t fresh(attr_with(16));
      packet_t* p = fresh.get();
      if (!p || p->pool != &fresh) ++errors;
      if (p) pool_t::put(p);
      if (fresh.count_free() != 16) ++errors;
    });
  while (done.load() != kThreads) std::this_thread::yield();
  EXPECT_EQ(errors.load(), 0);
  for (auto& pool : pools) expect_all_back(*pool);
  pools.clear();
  destroyed.store(true);
  for (auto& th : ts) th.join();
  EXPECT_EQ(errors.load(), 0);
}

// Packets held by pre-posted receives that never completed come back.
TEST(PacketPool, ReclaimRecvs)
{
  pool_t pool(attr_with(100));
  int dev_a = 0, dev_b = 0;
  std::vector<packet_t*> a, b;
  for (int i = 0; i < 30; ++i) {
    a.push_back(pool.get());
    a.back()->recv_owner = &dev_a;
  }
  for (int i = 0; i < 20; ++i) {
    b.push_back(pool.get());
    b.back()->recv_owner = &dev_b;
  }
  EXPECT_EQ(pool.count_free(), 50u);
  pool.reclaim_recvs(&dev_a);
  EXPECT_EQ(pool.count_free(), 80u);
  for (packet_t* p : a) EXPECT_EQ(static_cast<void*>(p->recv_owner), nullptr);
  for (packet_t* p : b) EXPECT_EQ(static_cast<void*>(p->recv_owner), &dev_b);
  // from another thread too
  std::thread([&] { pool.reclaim_recvs(&dev_b); }).join();
  EXPECT_EQ(pool.count_free(), 100u);
  std::vector<packet_t*> all;
  while (packet_t* p = pool.get()) all.push_back(p);
  EXPECT_EQ(all.size(), 100u);
  for (packet_t* p : all) pool_t::put(p);
}

TEST(PacketPool, RejectsBadAttributes)
{
  EXPECT_THROW({ pool_t p(attr_with(0)); }, lci::fatal_error);
  EXPECT_THROW({ pool_t p(attr_with(16, 8)); }, lci::fatal_error);
  EXPECT_THROW({ pool_t p(attr_with(16, 100)); }, lci::fatal_error);
}

}  // namespace
