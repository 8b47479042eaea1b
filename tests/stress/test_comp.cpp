// Stress tests of the completion objects (src/comp/): both completion queues
// under many producers and poppers, the array queue at its capacity and
// past it, LCRQ across many ring segments, synchronizers reused from many
// threads, and completion graphs (order, signals from other threads,
// restarts, edge callbacks, retries, a real send to self).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "comp/cq.hpp"
#include "comp/graph.hpp"
#include "comp/sync.hpp"
#include "lci.hpp"
#include "tsan.hpp"

namespace
{

// Iteration counts are halved under ThreadSanitizer (5-10x slower; the
// full counts take under 10 s per test there too, LCI_STRESS_FULL=1).
const int kScale = kTsan && !std::getenv("LCI_STRESS_FULL") ? 2 : 1;

constexpr int kThreads = 8;
constexpr auto kDeadline = std::chrono::seconds(90);

// Runs f(i) on n threads released together.
template <typename F>
void run_threads(int n, F f)
{
  std::atomic<bool> go{false};
  std::vector<std::thread> ts;
  for (int i = 0; i < n; ++i)
    ts.emplace_back([&, i] {
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      f(i);
    });
  go.store(true, std::memory_order_release);
  for (auto& t : ts) t.join();
}

// A status that carries (producer, seq) in every field, so a torn copy is
// detected.
lci::status_t make_status(int producer, uint32_t seq)
{
  lci::status_t s(lci::errorcode_t::done);
  s.rank = producer;
  s.tag = (static_cast<uint64_t>(producer) << 32) | seq;
  s.size = static_cast<size_t>(seq) * 3 + 1;
  s.buffer = reinterpret_cast<void*>(static_cast<uintptr_t>(seq) * 8 + 8);
  s.user_context = reinterpret_cast<void*>(s.tag ^ 0x5a5a5a5aull);
  return s;
}

// Checks a popped status; returns its (producer, seq), or producer -1.
std::pair<int, uint32_t> check_status(const lci::status_t& s)
{
  int p = static_cast<int>(s.tag >> 32);
  uint32_t seq = static_cast<uint32_t>(s.tag);
  bool ok = s.is_done() && p == s.rank && p >= 0 && p < 64 &&
            s.size == static_cast<size_t>(seq) * 3 + 1 &&
            s.buffer ==
                reinterpret_cast<void*>(static_cast<uintptr_t>(seq) * 8 + 8) &&
            s.user_context == reinterpret_cast<void*>(s.tag ^ 0x5a5a5a5aull);
  if (!ok) return {-1, 0};
  return {p, seq};
}

lci::comp_t alloc_cq(const std::string& type, size_t length)
{
  return lci::alloc_cq_x().cq_type(type).default_length(length)();
}

// ---------------------------------------------------------------------------
// completion queues, both types

struct cq_case_t {
  std::string type;
  size_t length;
};

class CqStress : public ::testing::TestWithParam<cq_case_t>
{
};

void PrintTo(const cq_case_t& c, std::ostream* os)
{
  *os << c.type << "/" << c.length;
}

std::string cq_case_name(const ::testing::TestParamInfo<cq_case_t>& info)
{
  return info.param.type + "_" + std::to_string(info.param.length);
}

// kThreads producers and 4 poppers at once: nothing lost or duplicated, and
// every popper sees each producer's statuses in increasing order.
TEST_P(CqStress, ProducersAndPoppersConcurrently)
{
  const int per_producer = 60000 / kScale;
  const int poppers = 4;
  const long total = static_cast<long>(kThreads) * per_producer;
  lci::comp_t cq = alloc_cq(GetParam().type, GetParam().length);
  std::vector<std::atomic<uint8_t>> seen(total);
  for (auto& s : seen) s.store(0);
  std::atomic<long> popped{0};
  std::atomic<long> bad{0}, reordered{0};
  auto deadline = std::chrono::steady_clock::now() + kDeadline;
  run_threads(kThreads + poppers, [&](int t) {
    if (t < kThreads) {
      for (int i = 0; i < per_producer; ++i)
        lci::comp_signal(cq, make_status(t, static_cast<uint32_t>(i)));
      return;
    }
    std::vector<long> last(kThreads, -1);
    unsigned idle = 0;
    while (popped.load(std::memory_order_relaxed) < total &&
           std::chrono::steady_clock::now() < deadline) {
      lci::status_t s = lci::cq_pop(cq);
      if (s.is_retry()) {
        if (++idle % 64 == 0) std::this_thread::yield();
        continue;
      }
      auto [p, seq] = check_status(s);
      if (p < 0 || seq >= static_cast<uint32_t>(per_producer)) {
        ++bad;
        continue;
      }
      if (static_cast<long>(seq) <= last[p]) ++reordered;
      last[p] = seq;
      seen[static_cast<long>(p) * per_producer + seq].fetch_add(1);
      popped.fetch_add(1, std::memory_order_relaxed);
    }
  });
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(reordered.load(), 0) << "FIFO per producer violated";
  EXPECT_EQ(popped.load(), total);
  long once = 0;
  for (auto& s : seen) once += s.load() == 1;
  EXPECT_EQ(once, total) << "statuses lost or duplicated";
  EXPECT_TRUE(lci::cq_pop(cq).is_retry());
  lci::free_comp(&cq);
}

// Every thread pushes and pops (the benchmark's pattern).
TEST_P(CqStress, EveryThreadPushesAndPops)
{
  const int per_thread = 50000 / kScale;
  const long total = static_cast<long>(kThreads) * per_thread;
  lci::comp_t cq = alloc_cq(GetParam().type, GetParam().length);
  std::vector<std::atomic<uint8_t>> seen(total);
  for (auto& s : seen) s.store(0);
  std::atomic<long> bad{0}, reordered{0}, popped{0};
  auto deadline = std::chrono::steady_clock::now() + kDeadline;
  run_threads(kThreads, [&](int t) {
    std::vector<long> last(kThreads, -1);
    auto take = [&](const lci::status_t& s) {
      auto [p, seq] = check_status(s);
      if (p < 0 || p >= kThreads || seq >= static_cast<uint32_t>(per_thread)) {
        ++bad;
        return;
      }
      if (static_cast<long>(seq) <= last[p]) ++reordered;
      last[p] = seq;
      seen[static_cast<long>(p) * per_thread + seq].fetch_add(1);
      popped.fetch_add(1, std::memory_order_relaxed);
    };
    for (int i = 0; i < per_thread; ++i) {
      lci::comp_signal(cq, make_status(t, static_cast<uint32_t>(i)));
      // pop one (the queue holds at least this thread's own status, unless
      // another thread took it: then retry a little, then move on)
      for (int k = 0; k < 100; ++k) {
        lci::status_t s = lci::cq_pop(cq);
        if (s.is_done()) {
          take(s);
          break;
        }
      }
    }
    // drain what is left
    while (popped.load() < total &&
           std::chrono::steady_clock::now() < deadline) {
      lci::status_t s = lci::cq_pop(cq);
      if (s.is_done())
        take(s);
      else
        std::this_thread::yield();
    }
  });
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(reordered.load(), 0) << "FIFO per producer violated";
  EXPECT_EQ(popped.load(), total);
  long once = 0;
  for (auto& s : seen) once += s.load() == 1;
  EXPECT_EQ(once, total) << "statuses lost or duplicated";
  EXPECT_TRUE(lci::cq_pop(cq).is_retry());
  lci::free_comp(&cq);
}

// All signals first, then one thread pops: strict FIFO per producer and a
// complete set. For the array queue with a short ring, most statuses go to
// the overflow.
TEST_P(CqStress, SignalAllThenPopAll)
{
  const int per_thread = 40000 / kScale;
  const long total = static_cast<long>(kThreads) * per_thread;
  lci::comp_t cq = alloc_cq(GetParam().type, GetParam().length);
  run_threads(kThreads, [&](int t) {
    for (int i = 0; i < per_thread; ++i)
      lci::comp_signal(cq, make_status(t, static_cast<uint32_t>(i)));
  });
  std::vector<long> next(kThreads, 0);
  for (long k = 0; k < total; ++k) {
    lci::status_t s = lci::cq_pop(cq);
    ASSERT_TRUE(s.is_done()) << "only " << k << " of " << total;
    auto [p, seq] = check_status(s);
    ASSERT_GE(p, 0) << "corrupted status";
    ASSERT_EQ(static_cast<long>(seq), next[p]) << "producer " << p;
    ++next[p];
  }
  EXPECT_TRUE(lci::cq_pop(cq).is_retry());
  lci::free_comp(&cq);
}

INSTANTIATE_TEST_SUITE_P(
    Types, CqStress,
    ::testing::Values(cq_case_t{"array", 8192}, cq_case_t{"array", 100},
                      cq_case_t{"array", 8}, cq_case_t{"lcrq", 8192},
                      cq_case_t{"lcrq", 64}, cq_case_t{"lcrq", 4}),
    cq_case_name);

// ---------------------------------------------------------------------------
// the array queue at and past its capacity

void fill_and_drain_at_capacity(size_t cap)
{
  lci::comp_t cq = alloc_cq("array", cap);
  auto* impl = static_cast<lci::array_cq_t*>(cq.get_impl());
  ASSERT_EQ(impl->capacity(), cap);
  uint32_t next_in = 0, next_out = 0;
  for (int round = 0; round < 5; ++round) {  // the ring wraps around
    SCOPED_TRACE(round);
    for (size_t i = 0; i < cap; ++i)
      lci::comp_signal(cq, make_status(0, next_in++));
    EXPECT_EQ(impl->overflow_size(), 0u) << "the ring holds exactly " << cap;
    // one more: the overflow takes it, nothing is lost
    lci::comp_signal(cq, make_status(0, next_in++));
    lci::comp_signal(cq, make_status(0, next_in++));
    EXPECT_EQ(impl->overflow_size(), 2u);
    while (next_out < next_in) {
      lci::status_t s = lci::cq_pop(cq);
      ASSERT_TRUE(s.is_done());
      auto [p, seq] = check_status(s);
      ASSERT_EQ(p, 0);
      ASSERT_EQ(seq, next_out++);
    }
    EXPECT_TRUE(lci::cq_pop(cq).is_retry());
    EXPECT_EQ(impl->overflow_size(), 0u);
    // half full, so the next round starts mid-ring
    for (size_t i = 0; i < cap / 2 + 1; ++i)
      lci::comp_signal(cq, make_status(0, next_in++));
    while (next_out < next_in) {
      lci::status_t s = lci::cq_pop(cq);
      ASSERT_TRUE(s.is_done());
      ASSERT_EQ(check_status(s).second, next_out++);
    }
  }
  lci::free_comp(&cq);
}

TEST(ArrayCq, ExactlyAtCapacityPowerOfTwo) { fill_and_drain_at_capacity(64); }
TEST(ArrayCq, ExactlyAtCapacityOther) { fill_and_drain_at_capacity(100); }
TEST(ArrayCq, ExactlyAtCapacityOne) { fill_and_drain_at_capacity(1); }

// A full ring never blocks a signal: 100x its capacity with no consumer.
TEST(ArrayCq, SignalNeverBlocksWhenFull)
{
  const size_t cap = 16;
  const uint32_t n = 1600;
  lci::comp_t cq = alloc_cq("array", cap);
  for (uint32_t i = 0; i < n; ++i) lci::comp_signal(cq, make_status(3, i));
  // while the overflow is in use, new statuses queue behind it
  for (uint32_t i = 0; i < n; ++i) {
    lci::status_t s = lci::cq_pop(cq);
    ASSERT_TRUE(s.is_done());
    ASSERT_EQ(check_status(s).second, i);
    if (i == n / 2)
      for (uint32_t j = 0; j < 5; ++j)
        lci::comp_signal(cq, make_status(3, n + j));
  }
  for (uint32_t j = 0; j < 5; ++j) {
    lci::status_t s = lci::cq_pop(cq);
    ASSERT_TRUE(s.is_done());
    ASSERT_EQ(check_status(s).second, n + j);
  }
  EXPECT_TRUE(lci::cq_pop(cq).is_retry());
  lci::free_comp(&cq);
}

TEST(Cq, BadAttributes)
{
  EXPECT_THROW(alloc_cq("ring", 16), lci::fatal_error);
  EXPECT_THROW(alloc_cq("array", 0), lci::fatal_error);
  EXPECT_THROW(alloc_cq("lcrq", 0), lci::fatal_error);
}

// ---------------------------------------------------------------------------
// LCRQ across many segments

TEST(LcrqCq, ManySegmentsFifoAndReuse)
{
  lci::comp_t cq = alloc_cq("lcrq", 4);
  auto* impl = static_cast<lci::lcrq_cq_t*>(cq.get_impl());
  const uint32_t n = 100000 / kScale;
  for (uint32_t i = 0; i < n; ++i) lci::comp_signal(cq, make_status(1, i));
  EXPECT_GE(impl->rings_allocated(), n / 4 - 1) << "one ring per 4 entries";
  for (uint32_t i = 0; i < n; ++i) {
    lci::status_t s = lci::cq_pop(cq);
    ASSERT_TRUE(s.is_done()) << i;
    ASSERT_EQ(check_status(s).second, i);
  }
  EXPECT_TRUE(lci::cq_pop(cq).is_retry());
  // drained rings went back to the pool or were freed
  EXPECT_LE(impl->rings_allocated(), 8u);

  // steady state: a backlog of a few segments, pushed and popped over and
  // over, reuses pooled rings instead of allocating
  uint32_t in = 0, out = 0;
  for (int k = 0; k < 12; ++k) lci::comp_signal(cq, make_status(2, in++));
  size_t rings = impl->rings_allocated();
  for (int round = 0; round < 20000 / kScale; ++round) {
    lci::comp_signal(cq, make_status(2, in++));
    lci::status_t s = lci::cq_pop(cq);
    ASSERT_TRUE(s.is_done());
    ASSERT_EQ(check_status(s).second, out++);
  }
  EXPECT_LE(impl->rings_allocated(), rings + 1) << "allocation in steady state";
  while (out < in) {
    lci::status_t s = lci::cq_pop(cq);
    ASSERT_TRUE(s.is_done());
    ASSERT_EQ(check_status(s).second, out++);
  }
  lci::free_comp(&cq);
}

TEST(LcrqCq, ManySegmentsConcurrently)
{
  lci::comp_t cq = alloc_cq("lcrq", 2);
  const int per_thread = 20000 / kScale;
  const long total = static_cast<long>(kThreads) * per_thread;
  std::vector<std::atomic<uint8_t>> seen(total);
  for (auto& s : seen) s.store(0);
  std::atomic<long> popped{0}, bad{0}, reordered{0};
  auto deadline = std::chrono::steady_clock::now() + kDeadline;
  run_threads(kThreads, [&](int t) {
    std::vector<long> last(kThreads, -1);
    int pushed = 0;
    while (popped.load() < total &&
           std::chrono::steady_clock::now() < deadline) {
      // bursts of pushes (close rings) and of pops (retire them)
      for (int k = 0; k < 7 && pushed < per_thread; ++k, ++pushed)
        lci::comp_signal(cq, make_status(t, static_cast<uint32_t>(pushed)));
      for (int k = 0; k < 7; ++k) {
        lci::status_t s = lci::cq_pop(cq);
        if (!s.is_done()) break;
        auto [p, seq] = check_status(s);
        if (p < 0 || p >= kThreads) {
          ++bad;
          continue;
        }
        if (static_cast<long>(seq) <= last[p]) ++reordered;
        last[p] = seq;
        seen[static_cast<long>(p) * per_thread + seq].fetch_add(1);
        popped.fetch_add(1);
      }
    }
  });
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(reordered.load(), 0);
  EXPECT_EQ(popped.load(), total);
  long once = 0;
  for (auto& s : seen) once += s.load() == 1;
  EXPECT_EQ(once, total);
  lci::free_comp(&cq);
}

// ---------------------------------------------------------------------------
// synchronizers

// Threshold 1, reused: each round one of the threads (whoever wins the
// round) signals; the main thread waits, checks and opens the next round.
TEST(Sync, ThresholdOneManyThreadsReused)
{
  lci::comp_t sync = lci::alloc_sync();
  const int rounds = 20000 / kScale;
  std::atomic<int> round{0};  // the round open for signalling
  std::atomic<int> claimed{-1};
  std::atomic<bool> stop{false};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      int seen = -1;
      while (!stop.load(std::memory_order_acquire)) {
        int r = round.load(std::memory_order_acquire);
        if (r == seen) {
          std::this_thread::yield();
          continue;
        }
        seen = r;
        int expected = r - 1;
        if (claimed.compare_exchange_strong(expected, r))
          lci::comp_signal(sync, make_status(t, static_cast<uint32_t>(r)));
      }
    });
  for (int r = 0; r < rounds; ++r) {
    lci::status_t out;
    lci::sync_wait_x(sync, &out).do_progress(false)();
    auto [p, seq] = check_status(out);
    ASSERT_GE(p, 0);
    ASSERT_EQ(seq, static_cast<uint32_t>(r));
    ASSERT_FALSE(lci::sync_test(sync, nullptr)) << "not re-armed";
    round.store(r + 1, std::memory_order_release);
  }
  stop.store(true);
  for (auto& t : ts) t.join();
  lci::free_comp(&sync);
}

// Threshold N = kThreads, reused: every thread signals once per round.
TEST(Sync, ThresholdNManyThreadsReused)
{
  lci::comp_t sync = lci::alloc_sync_x().threshold(kThreads)();
  const int rounds = 5000 / kScale;
  std::atomic<int> round{0};
  std::atomic<bool> stop{false};
  std::atomic<int> early{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      int seen = -1;
      while (!stop.load(std::memory_order_acquire)) {
        int r = round.load(std::memory_order_acquire);
        if (r == seen || r >= rounds) {
          std::this_thread::yield();
          continue;
        }
        seen = r;
        lci::comp_signal(sync, make_status(t, static_cast<uint32_t>(r)));
      }
    });
  std::vector<lci::status_t> out(kThreads);
  for (int r = 0; r < rounds; ++r) {
    while (!lci::sync_test(sync, out.data())) std::this_thread::yield();
    std::vector<int> from(kThreads, 0);
    for (const auto& s : out) {
      auto [p, seq] = check_status(s);
      ASSERT_GE(p, 0);
      ASSERT_LT(p, kThreads);
      ASSERT_EQ(seq, static_cast<uint32_t>(r));
      ++from[p];
    }
    for (int t = 0; t < kThreads; ++t) ASSERT_EQ(from[t], 1) << "thread " << t;
    if (lci::sync_test(sync, nullptr)) ++early;
    round.store(r + 1, std::memory_order_release);
  }
  stop.store(true);
  for (auto& t : ts) t.join();
  EXPECT_EQ(early.load(), 0);
  lci::free_comp(&sync);
}

// ---------------------------------------------------------------------------
// graphs

struct node_rec_t {
  std::atomic<int> runs{0};
  std::atomic<long> order{-1};  // position in the run, from a shared clock
  std::atomic<long>* clock = nullptr;
  uint64_t tag = 0;
};

lci::status_t run_rec(void* v)
{
  auto* r = static_cast<node_rec_t*>(v);
  r->runs.fetch_add(1);
  r->order.store(r->clock->fetch_add(1));
  lci::status_t s(lci::errorcode_t::done);
  s.tag = r->tag;
  return s;
}

lci::status_t wait_graph(lci::comp_t g)
{
  auto deadline = std::chrono::steady_clock::now() + kDeadline;
  lci::status_t s;
  while ((s = lci::graph_test(g)).is_retry() &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  return s;
}

// A -> B, A -> C, B -> D, C -> D, restarted 1000 times.
TEST(Graph, DiamondOrderRestarted1000Times)
{
  std::atomic<long> clock{0};
  node_rec_t a, b, c, d;
  for (auto* r : {&a, &b, &c, &d}) r->clock = &clock;
  lci::comp_t g = lci::alloc_graph();
  EXPECT_TRUE(lci::graph_test(g).is_retry()) << "never started";
  lci::graph_node_t na = lci::graph_add_node_x(g, run_rec).value(&a)();
  lci::graph_node_t nb = lci::graph_add_node_x(g, run_rec).value(&b)();
  lci::graph_node_t nc = lci::graph_add_node_x(g, run_rec).value(&c)();
  lci::graph_node_t nd = lci::graph_add_node_x(g, run_rec).value(&d)();
  lci::graph_add_edge(g, lci::GRAPH_START, na);
  lci::graph_add_edge(g, na, nb);
  lci::graph_add_edge(g, na, nc);
  lci::graph_add_edge(g, nb, nd);
  lci::graph_add_edge(g, nc, nd);
  lci::graph_add_edge(g, nd, lci::GRAPH_END);
  for (int run = 1; run <= 1000; ++run) {
    lci::graph_start(g);
    ASSERT_TRUE(wait_graph(g).is_done());
    for (auto* r : {&a, &b, &c, &d}) ASSERT_EQ(r->runs.load(), run);
    ASSERT_LT(a.order.load(), b.order.load());
    ASSERT_LT(a.order.load(), c.order.load());
    ASSERT_LT(b.order.load(), d.order.load());
    ASSERT_LT(c.order.load(), d.order.load());
    ASSERT_TRUE(lci::graph_test(g).is_done()) << "stays done until restarted";
  }
  lci::free_comp(&g);
}

// Edge callbacks get (source status, source value, destination value).
struct edge_log_t {
  std::atomic<int> calls{0};
  std::atomic<bool> ok{true};
};
edge_log_t g_edge_log;
node_rec_t g_x, g_y;

void check_edge(lci::status_t s, void* src, void* dst)
{
  g_edge_log.calls.fetch_add(1);
  bool ok;
  if (src == nullptr)  // GRAPH_START -> x
    ok = dst == &g_x && s.is_done();
  else if (dst == nullptr)  // y -> GRAPH_END
    ok = src == &g_y && s.tag == 22;
  else  // x -> y
    ok = src == &g_x && dst == &g_y && s.tag == 11 && g_y.order.load() < 0;
  if (!ok) g_edge_log.ok = false;
}

TEST(Graph, EdgeCallbacksGetTheRightValues)
{
  std::atomic<long> clock{0};
  g_edge_log.calls = 0;
  g_edge_log.ok = true;
  g_x.clock = g_y.clock = &clock;
  g_x.tag = 11;
  g_y.tag = 22;
  lci::comp_t g = lci::alloc_graph();
  lci::graph_node_t x = lci::graph_add_node_x(g, run_rec).value(&g_x)();
  lci::graph_node_t y = lci::graph_add_node_x(g, run_rec).value(&g_y)();
  lci::graph_add_edge_x(g, lci::GRAPH_START, x).fn(check_edge)();
  lci::graph_add_edge_x(g, x, y).fn(check_edge)();
  lci::graph_add_edge_x(g, y, lci::GRAPH_END).fn(check_edge)();
  for (int run = 0; run < 10; ++run) {
    g_y.order = -1;
    lci::graph_start(g);
    ASSERT_TRUE(wait_graph(g).is_done());
  }
  EXPECT_EQ(g_edge_log.calls.load(), 30);
  EXPECT_TRUE(g_edge_log.ok.load());
  lci::free_comp(&g);
}

// A posted node completed by comp_signal from another thread, with
// user_context = the node; its successor then runs. Restarted many times.
struct posted_t {
  std::atomic<int> fired{0};
};

lci::status_t run_posted(void* v)
{
  static_cast<posted_t*>(v)->fired.fetch_add(1);
  return lci::status_t(lci::errorcode_t::posted);
}

TEST(Graph, NodeCompletedBySignalFromAnotherThread)
{
  std::atomic<long> clock{0};
  node_rec_t after;
  after.clock = &clock;
  posted_t p;
  lci::comp_t sync = lci::alloc_sync();
  lci::comp_t g = lci::alloc_graph_x().comp(sync)();
  lci::graph_node_t np = lci::graph_add_node_x(g, run_posted).value(&p)();
  lci::graph_node_t na = lci::graph_add_node_x(g, run_rec).value(&after)();
  lci::graph_add_edge(g, np, na);
  const int runs = 1000;
  std::atomic<bool> stop{false};
  std::thread signaller([&] {
    int done = 0;
    while (done < runs && !stop.load()) {
      if (p.fired.load() > done) {
        lci::status_t s(lci::errorcode_t::done);
        s.user_context = np;
        s.tag = 77;
        lci::comp_signal(g, s);
        ++done;
      } else {
        std::this_thread::yield();
      }
    }
  });
  for (int run = 1; run <= runs; ++run) {
    lci::graph_start(g);
    lci::status_t s;
    lci::sync_wait_x(sync, &s).do_progress(false)();  // the graph's comp
    ASSERT_TRUE(s.is_done());
    ASSERT_EQ(s.user_context, static_cast<void*>(g.get_impl()));
    ASSERT_TRUE(lci::graph_test(g).is_done());
    ASSERT_EQ(after.runs.load(), run);
  }
  stop = true;
  signaller.join();
  lci::free_comp(&g);
  lci::free_comp(&sync);
}

// Many posted nodes completed concurrently by 8 threads; the sink runs once.
TEST(Graph, WideGraphCompletedByManyThreads)
{
  const int width = 64;
  const int runs = 300 / kScale;
  std::atomic<long> clock{0};
  node_rec_t root, sink;
  root.clock = sink.clock = &clock;
  std::vector<posted_t> ps(width);
  lci::comp_t g = lci::alloc_graph();
  lci::graph_node_t nr = lci::graph_add_node_x(g, run_rec).value(&root)();
  lci::graph_node_t ns = lci::graph_add_node_x(g, run_rec).value(&sink)();
  std::vector<lci::graph_node_t> mids;
  for (int i = 0; i < width; ++i) {
    mids.push_back(lci::graph_add_node_x(g, run_posted).value(&ps[i])());
    lci::graph_add_edge(g, nr, mids.back());
    lci::graph_add_edge(g, mids.back(), ns);
  }
  for (int run = 1; run <= runs; ++run) {
    lci::graph_start(g);
    run_threads(kThreads, [&](int t) {
      for (int i = t; i < width; i += kThreads) {
        while (ps[i].fired.load() < run) std::this_thread::yield();
        if (i % 2)
          lci::graph_node_mark_complete(mids[i]);
        else {
          lci::status_t s(lci::errorcode_t::done);
          s.user_context = mids[i];
          lci::comp_signal(g, s);
        }
      }
    });
    ASSERT_TRUE(lci::graph_test(g).is_done());
    ASSERT_EQ(sink.runs.load(), run);
  }
  lci::free_comp(&g);
}

// A node completed with a failure still completes (its successors run),
// and the run ends with the failure's error code, in graph_test and in the
// graph's completion object; a restart with no failure ends done again.
// Nodes are completed by several threads at once, so the failing one may
// be the last to complete or not.
TEST(Graph, FailedNodeEndsTheRunWithItsError)
{
  const int width = 16;
  const int runs = 200 / kScale;
  std::atomic<long> clock{0};
  node_rec_t sink;
  sink.clock = &clock;
  std::vector<posted_t> ps(width);
  lci::comp_t sync = lci::alloc_sync();
  lci::comp_t g = lci::alloc_graph_x().comp(sync)();
  lci::graph_node_t ns = lci::graph_add_node_x(g, run_rec).value(&sink)();
  std::vector<lci::graph_node_t> mids;
  for (int i = 0; i < width; ++i) {
    mids.push_back(lci::graph_add_node_x(g, run_posted).value(&ps[i])());
    lci::graph_add_edge(g, mids.back(), ns);
  }
  for (int run = 1; run <= runs; ++run) {
    // every third run has no failure; else one node fails, or two with
    // different codes (either may be first)
    const int fail1 = run % 3 == 0 ? -1 : run % width;
    const int fail2 = run % 3 == 2 ? (run * 7 + 3) % width : -1;
    lci::graph_start(g);
    run_threads(kThreads, [&](int t) {
      for (int i = t; i < width; i += kThreads) {
        while (ps[i].fired.load() < run) std::this_thread::yield();
        lci::status_t s(lci::errorcode_t::done);
        if (i == fail1) s = lci::status_t(lci::errorcode_t::fatal_peer_failure);
        if (i == fail2 && i != fail1)
          s = lci::status_t(lci::errorcode_t::fatal);
        if (i % 2) {
          lci::graph_node_mark_complete_x(mids[i]).status(s)();
        } else {
          s.user_context = mids[i];
          lci::comp_signal(g, s);
        }
      }
    });
    lci::status_t via_comp;
    lci::sync_wait_x(sync, &via_comp).do_progress(false)();
    const lci::status_t tested = lci::graph_test(g);
    ASSERT_EQ(sink.runs.load(), run) << "the sink runs after a failure too";
    ASSERT_EQ(via_comp.user_context, static_cast<void*>(g.get_impl()));
    ASSERT_EQ(tested.error.errorcode, via_comp.error.errorcode);
    if (fail1 < 0) {
      ASSERT_TRUE(tested.is_done()) << "run " << run;
    } else if (fail2 < 0 || fail2 == fail1) {
      ASSERT_EQ(tested.error.errorcode, lci::errorcode_t::fatal_peer_failure)
          << "run " << run;
    } else {
      ASSERT_TRUE(tested.error.errorcode ==
                      lci::errorcode_t::fatal_peer_failure ||
                  tested.error.errorcode == lci::errorcode_t::fatal)
          << "run " << run << ": " << tested.error.get_str();
    }
  }
  lci::free_comp(&g);
  lci::free_comp(&sync);
}

// retry: fired again by graph_test until it returns done.
struct retry_t {
  int left;
  int calls = 0;
};

lci::status_t run_retry(void* v)
{
  auto* r = static_cast<retry_t*>(v);
  ++r->calls;
  if (r->left > 0) {
    --r->left;
    return lci::status_t(lci::errorcode_t::retry_nopacket);
  }
  return lci::status_t(lci::errorcode_t::done);
}

TEST(Graph, RetriedOnTest)
{
  retry_t r{3};
  std::atomic<long> clock{0};
  node_rec_t after;
  after.clock = &clock;
  lci::comp_t g = lci::alloc_graph();
  lci::graph_node_t n = lci::graph_add_node_x(g, run_retry).value(&r)();
  lci::graph_node_t m = lci::graph_add_node_x(g, run_rec).value(&after)();
  lci::graph_add_edge(g, n, m);
  lci::graph_start(g);
  EXPECT_EQ(r.calls, 1);
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(lci::graph_test(g).is_retry());
    EXPECT_EQ(r.calls, 2 + i);
  }
  // this test runs the node's last attempt (done) and then its successor
  EXPECT_TRUE(lci::graph_test(g).is_done());
  EXPECT_EQ(r.calls, 4);
  EXPECT_EQ(after.runs.load(), 1);
  lci::free_comp(&g);
}

// A chain long enough to overflow the stack if completions recursed.
TEST(Graph, LongChainAndNullFunctions)
{
  lci::comp_t g = lci::alloc_graph();
  lci::graph_node_t prev = lci::GRAPH_START;
  const int n = 200000 / kScale;
  for (int i = 0; i < n; ++i) {
    lci::graph_node_t cur = lci::graph_add_node(g, nullptr);
    lci::graph_add_edge(g, prev, cur);
    prev = cur;
  }
  for (int run = 0; run < 3; ++run) {
    lci::graph_start(g);
    ASSERT_TRUE(lci::graph_test(g).is_done());
  }
  lci::free_comp(&g);
}

std::atomic<int> g_freed{0};
void free_counted(void* v)
{
  g_freed.fetch_add(1);
  delete static_cast<int*>(v);
}

TEST(Graph, FreeCallsFreeCbAndEmptyGraphCompletes)
{
  lci::comp_t sync = lci::alloc_sync();
  lci::comp_t g = lci::alloc_graph_x().comp(sync)();
  lci::graph_start(g);  // no nodes: complete at once
  EXPECT_TRUE(lci::graph_test(g).is_done());
  EXPECT_TRUE(lci::sync_test(sync, nullptr));
  lci::comp_t g2 = lci::alloc_graph();
  for (int i = 0; i < 5; ++i)
    lci::graph_add_node_x(g2, nullptr)
        .value(new int(i))
        .free_cb(free_counted)();
  g_freed = 0;
  lci::free_comp(&g2);
  EXPECT_EQ(g_freed.load(), 5);
  lci::free_comp(&g);
  lci::free_comp(&sync);
}

TEST(Graph, Misuse)
{
  lci::comp_t g = lci::alloc_graph();
  lci::comp_t g2 = lci::alloc_graph();
  posted_t p;
  lci::graph_node_t n = lci::graph_add_node_x(g, run_posted).value(&p)();
  lci::graph_node_t other = lci::graph_add_node(g2, nullptr);
  EXPECT_THROW(lci::graph_add_edge(g, n, n), lci::fatal_error);
  EXPECT_THROW(lci::graph_add_edge(g, n, other), lci::fatal_error);
  EXPECT_THROW(lci::graph_add_edge(g, lci::GRAPH_END, n), lci::fatal_error);
  EXPECT_THROW(lci::graph_add_edge(g, n, lci::GRAPH_START), lci::fatal_error);
  lci::graph_start(g);
  EXPECT_THROW(lci::graph_start(g), lci::fatal_error);  // still running
  lci::status_t wrong(lci::errorcode_t::done);
  wrong.user_context = other;
  EXPECT_THROW(lci::comp_signal(g, wrong), lci::fatal_error);
  lci::graph_node_mark_complete(n);
  EXPECT_TRUE(lci::graph_test(g).is_done());
  EXPECT_THROW(lci::graph_node_mark_complete(n), lci::fatal_error);  // twice
  lci::comp_t cq = lci::alloc_cq();
  EXPECT_THROW(lci::graph_start(cq), lci::fatal_error);
  EXPECT_THROW(lci::cq_pop(g), lci::fatal_error);
  lci::free_comp(&cq);
  lci::free_comp(&g);
  lci::free_comp(&g2);
}

// ---------------------------------------------------------------------------
// a graph of real communication: the process talks to itself

class GraphComm : public ::testing::Test
{
 protected:
  void SetUp() override { lci::g_runtime_init(); }
  void TearDown() override { lci::g_runtime_fina(); }
};

struct recv_t {
  uint64_t buf[4];
  lci::graph_node_t node;
  lci::comp_t graph;
};

// A node built by hand with graph_add_node: posts a receive with the graph
// as its completion object and the node as user_context.
lci::status_t run_recv(void* v)
{
  auto* r = static_cast<recv_t*>(v);
  std::memset(r->buf, 0, sizeof(r->buf));
  return lci::post_recv_x(0, r->buf, sizeof(r->buf), 4711, r->graph)
      .user_context(r->node)();
}

struct check_t {
  recv_t* recv;
  uint64_t expect;
  std::atomic<int> ok{0};
};

lci::status_t run_check(void* v)
{
  auto* c = static_cast<check_t*>(v);
  bool ok = true;
  for (int i = 0; i < 4; ++i) ok = ok && c->recv->buf[i] == c->expect + i;
  if (ok) c->ok.fetch_add(1);
  return lci::status_t(lci::errorcode_t::done);
}

TEST_F(GraphComm, SendToSelfThroughGraph)
{
  lci::comp_t g = lci::alloc_graph();
  recv_t r;
  r.graph = g;
  r.node = lci::graph_add_node_x(g, run_recv).value(&r)();
  uint64_t payload[4];
  // the send node: an OFF object run as a node; allow_done(false) makes it
  // complete through a signal of the graph
  lci::graph_node_t s = lci::graph_add_node_op(
      g, lci::post_send_x(0, payload, sizeof(payload), 4711, lci::COMP_NULL)
             .allow_done(false));
  check_t c;
  c.recv = &r;
  lci::graph_node_t k = lci::graph_add_node_x(g, run_check).value(&c)();
  lci::graph_add_edge(g, lci::GRAPH_START, r.node);
  lci::graph_add_edge(g, lci::GRAPH_START, s);
  lci::graph_add_edge(g, r.node, k);
  lci::graph_add_edge(g, s, k);
  const int runs = 50;
  for (int run = 0; run < runs; ++run) {
    c.expect = 1000 * run;
    for (int i = 0; i < 4; ++i) payload[i] = c.expect + i;
    lci::graph_start(g);
    auto deadline = std::chrono::steady_clock::now() + kDeadline;
    while (!lci::graph_test(g).is_done() &&
           std::chrono::steady_clock::now() < deadline)
      lci::progress();
    ASSERT_TRUE(lci::graph_test(g).is_done()) << "run " << run;
  }
  EXPECT_EQ(c.ok.load(), runs);
  lci::free_comp(&g);
}

}  // namespace
