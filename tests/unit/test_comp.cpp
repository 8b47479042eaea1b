// Completion objects on their own (signalled with comp_signal): synchronizer,
// completion queue, handler, counter; single-threaded semantics, then many
// threads signalling one object at once.
#include <algorithm>
#include <atomic>
#include <thread>

#include "lci_test_common.hpp"

namespace
{

using lci_test::LciTest;
using ::testing::HasSubstr;

constexpr int kThreads = 8;
constexpr int kSignalsPerThread = 10000;
constexpr int kTotal = kThreads * kSignalsPerThread;

lci::status_t make_status(lci::tag_t tag, void* ctx = nullptr)
{
  lci::status_t s(lci::errorcode_t::done);
  s.tag = tag;
  s.rank = 0;
  s.size = static_cast<size_t>(tag) * 3;
  s.user_context = ctx;
  return s;
}

// Runs f(thread_index) on kThreads threads released together.
template <typename F>
void run_threads(F f)
{
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      f(t);
    });
  go.store(true, std::memory_order_release);
  for (auto& th : threads) th.join();
}

// ---------------------------------------------------------------------------
// synchronizer

TEST_F(LciTest, SyncThresholdOne)
{
  lci::comp_t sync = lci::alloc_sync();
  lci::status_t out;
  EXPECT_FALSE(lci::sync_test(sync, &out));
  EXPECT_FALSE(lci::sync_test(sync, nullptr));
  int ctx = 0;
  lci::comp_signal(sync, make_status(7, &ctx));
  EXPECT_TRUE(lci::sync_test(sync, &out));
  EXPECT_EQ(out.tag, 7u);
  EXPECT_EQ(out.size, 21u);
  EXPECT_EQ(out.user_context, &ctx);
  // re-armed: false again until the next signal
  EXPECT_FALSE(lci::sync_test(sync, &out));
  lci::comp_signal(sync, make_status(8));
  EXPECT_TRUE(lci::sync_test(sync, nullptr));  // p_out may be null
  EXPECT_FALSE(lci::sync_test(sync, nullptr));
  lci::free_comp(&sync);
  EXPECT_TRUE(sync.is_empty());
}

TEST_F(LciTest, SyncThresholdN)
{
  const int n = 5;
  lci::comp_t sync = lci::alloc_sync_x().threshold(n)();
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    std::vector<lci::status_t> out(n);
    for (int i = 0; i < n; ++i) {
      EXPECT_FALSE(lci::sync_test(sync, out.data())) << "after " << i;
      lci::comp_signal(sync, make_status(100 * round + i));
    }
    ASSERT_TRUE(lci::sync_test(sync, out.data()));
    std::vector<lci::tag_t> tags;
    for (const auto& s : out) tags.push_back(s.tag);
    std::sort(tags.begin(), tags.end());
    for (int i = 0; i < n; ++i)
      EXPECT_EQ(tags[i], static_cast<lci::tag_t>(100 * round + i));
    EXPECT_FALSE(lci::sync_test(sync, out.data())) << "not re-armed";
  }
  lci::free_comp(&sync);
}

TEST_F(LciTest, SyncWaitWithAndWithoutProgress)
{
  lci::comp_t sync = lci::alloc_sync_x().threshold(2)();
  lci::comp_signal(sync, make_status(1));
  lci::comp_signal(sync, make_status(2));
  lci::status_t out[2];
  lci::sync_wait_x(sync, out).do_progress(false)();
  EXPECT_EQ(out[0].tag + out[1].tag, 3u);
  EXPECT_FALSE(lci::sync_test(sync, nullptr));

  // signals from another thread release a waiter
  std::thread signaller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    lci::comp_signal(sync, make_status(3));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    lci::comp_signal(sync, make_status(4));
  });
  lci::sync_wait(sync, out);
  signaller.join();
  EXPECT_EQ(out[0].tag + out[1].tag, 7u);
  lci::free_comp(&sync);
}

TEST_F(LciTest, SyncManyThreadsThreshold80000)
{
  lci::comp_t sync = lci::alloc_sync_x().threshold(kTotal)();
  std::vector<lci::status_t> out(kTotal);
  std::atomic<int> started{0};  // signals begun (incremented before each)
  int started_when_ready = -1;
  bool ready = false;
  // one thread tests (the synchronizer allows a single tester) while the
  // signals arrive: it must not succeed before every signal has begun
  std::thread tester([&] {
    auto deadline = std::chrono::steady_clock::now() + lci_test::kWaitLimit;
    while (std::chrono::steady_clock::now() < deadline) {
      if (lci::sync_test(sync, out.data())) {
        started_when_ready = started.load();
        ready = true;
        return;
      }
    }
  });
  run_threads([&](int t) {
    for (int i = 0; i < kSignalsPerThread; ++i) {
      started.fetch_add(1);
      lci::comp_signal(
          sync,
          make_status(static_cast<lci::tag_t>(t) * kSignalsPerThread + i));
    }
  });
  tester.join();
  ASSERT_TRUE(ready) << "sync_test never succeeded";
  EXPECT_EQ(started_when_ready, kTotal)
      << "sync_test succeeded before all signals";
  // every status is there, once
  std::vector<int> seen(kTotal, 0);
  for (const auto& s : out) {
    ASSERT_LT(s.tag, static_cast<lci::tag_t>(kTotal));
    ++seen[s.tag];
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), kTotal)
      << "some status missing or duplicated";
  EXPECT_FALSE(lci::sync_test(sync, nullptr)) << "not re-armed";
  // a second round from many threads
  run_threads([&](int t) {
    for (int i = 0; i < kSignalsPerThread; ++i)
      lci::comp_signal(sync, make_status(t));
  });
  EXPECT_TRUE(lci::sync_test(sync, nullptr));
  EXPECT_FALSE(lci::sync_test(sync, nullptr));
  lci::free_comp(&sync);
}

// ---------------------------------------------------------------------------
// completion queue

TEST_F(LciTest, CqFifoAndRetryWhenEmpty)
{
  lci::comp_t cq = lci::alloc_cq();
  EXPECT_TRUE(lci::cq_pop(cq).is_retry());
  int ctx[10];
  for (int i = 0; i < 10; ++i) lci::comp_signal(cq, make_status(i, &ctx[i]));
  for (int i = 0; i < 10; ++i) {
    lci::status_t s = lci::cq_pop(cq);
    ASSERT_TRUE(s.is_done()) << s.error.get_str();
    EXPECT_EQ(s.tag, static_cast<lci::tag_t>(i));
    EXPECT_EQ(s.size, static_cast<size_t>(3 * i));
    EXPECT_EQ(s.user_context, &ctx[i]);
  }
  lci::status_t s = lci::cq_pop(cq);
  EXPECT_TRUE(s.is_retry());
  EXPECT_FALSE(s.is_done());
  lci::free_comp(&cq);
}

TEST_F(LciTest, CqGrowsPastDefaultLength)
{
  lci::comp_t cq = lci::alloc_cq_x().default_length(4)();
  const int n = 1000;
  for (int i = 0; i < n; ++i) lci::comp_signal(cq, make_status(i));
  for (int i = 0; i < n; ++i) {
    lci::status_t s = lci::cq_pop(cq);
    ASSERT_TRUE(s.is_done());
    ASSERT_EQ(s.tag, static_cast<lci::tag_t>(i));
  }
  EXPECT_TRUE(lci::cq_pop(cq).is_retry());

  // grow while the ring has wrapped around: push 3, pop 2, repeatedly
  lci::tag_t next_in = 0, next_out = 0;
  for (int round = 0; round < 300; ++round) {
    for (int k = 0; k < 3; ++k) lci::comp_signal(cq, make_status(next_in++));
    for (int k = 0; k < 2; ++k) {
      lci::status_t s = lci::cq_pop(cq);
      ASSERT_TRUE(s.is_done());
      ASSERT_EQ(s.tag, next_out++) << "FIFO order lost in round " << round;
    }
  }
  while (next_out < next_in) {
    lci::status_t s = lci::cq_pop(cq);
    ASSERT_TRUE(s.is_done());
    ASSERT_EQ(s.tag, next_out++);
  }
  EXPECT_TRUE(lci::cq_pop(cq).is_retry());
  lci::free_comp(&cq);
}

TEST_F(LciTest, CqManyThreadsSignalThenPop)
{
  lci::comp_t cq = lci::alloc_cq();  // 8192 entries: grows under contention
  run_threads([&](int t) {
    for (int i = 0; i < kSignalsPerThread; ++i)
      lci::comp_signal(
          cq, make_status(static_cast<lci::tag_t>(t) * kSignalsPerThread + i));
  });
  std::vector<int> seen(kTotal, 0);
  std::vector<int> last(kThreads, -1);
  for (int k = 0; k < kTotal; ++k) {
    lci::status_t s = lci::cq_pop(cq);
    ASSERT_TRUE(s.is_done()) << "only " << k << " statuses in the queue";
    ASSERT_LT(s.tag, static_cast<lci::tag_t>(kTotal));
    ++seen[s.tag];
    // FIFO: the statuses of one thread come out in the order it signalled
    int t = static_cast<int>(s.tag / kSignalsPerThread);
    int i = static_cast<int>(s.tag % kSignalsPerThread);
    EXPECT_GT(i, last[t]);
    last[t] = i;
  }
  EXPECT_TRUE(lci::cq_pop(cq).is_retry());
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), kTotal);
  lci::free_comp(&cq);
}

TEST_F(LciTest, CqManyThreadsSignalAndPopConcurrently)
{
  lci::comp_t cq = lci::alloc_cq_x().default_length(16)();
  std::vector<std::atomic<int>> seen(kTotal);
  for (auto& s : seen) s = 0;
  std::atomic<int> popped{0};
  std::atomic<int> bad{0};
  // half the threads signal, half pop, all at once
  run_threads([&](int t) {
    if (t % 2 == 0) {
      int producer = t / 2;
      for (int i = 0; i < 2 * kSignalsPerThread; ++i)
        lci::comp_signal(cq, make_status(static_cast<lci::tag_t>(producer) * 2 *
                                             kSignalsPerThread +
                                         i));
    } else {
      auto deadline = std::chrono::steady_clock::now() + lci_test::kWaitLimit;
      while (popped.load() < kTotal &&
             std::chrono::steady_clock::now() < deadline) {
        lci::status_t s = lci::cq_pop(cq);
        if (s.is_retry()) continue;
        if (!s.is_done() || s.tag >= static_cast<lci::tag_t>(kTotal)) {
          ++bad;
          continue;
        }
        seen[s.tag].fetch_add(1);
        popped.fetch_add(1);
      }
    }
  });
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(popped.load(), kTotal);
  int once = 0;
  for (auto& s : seen) once += s.load() == 1;
  EXPECT_EQ(once, kTotal) << "some status missing or popped twice";
  EXPECT_TRUE(lci::cq_pop(cq).is_retry());
  lci::free_comp(&cq);
}

// ---------------------------------------------------------------------------
// handler

std::atomic<int> g_calls{0};
std::atomic<uint64_t> g_tag_sum{0};
lci::status_t g_last;

void record_handler(lci::status_t s)
{
  g_last = s;
  g_tag_sum.fetch_add(s.tag);
  g_calls.fetch_add(1);
}

void counting_handler(lci::status_t s)
{
  g_tag_sum.fetch_add(s.tag, std::memory_order_relaxed);
  g_calls.fetch_add(1, std::memory_order_relaxed);
}

TEST_F(LciTest, HandlerInvokedOnSignal)
{
  g_calls = 0;
  g_tag_sum = 0;
  lci::comp_t h = lci::alloc_handler(record_handler);
  EXPECT_EQ(g_calls.load(), 0);
  int ctx = 0;
  lci::comp_signal(h, make_status(42, &ctx));
  // the handler runs inside comp_signal, on this thread
  EXPECT_EQ(g_calls.load(), 1);
  EXPECT_EQ(g_last.tag, 42u);
  EXPECT_EQ(g_last.size, 126u);
  EXPECT_EQ(g_last.user_context, &ctx);
  lci::comp_signal(h, make_status(43));
  EXPECT_EQ(g_calls.load(), 2);
  EXPECT_EQ(g_last.tag, 43u);
  lci::free_comp(&h);
}

TEST_F(LciTest, HandlerManyThreads)
{
  g_calls = 0;
  g_tag_sum = 0;
  lci::comp_t h = lci::alloc_handler(counting_handler);
  run_threads([&](int t) {
    for (int i = 0; i < kSignalsPerThread; ++i)
      lci::comp_signal(
          h, make_status(static_cast<lci::tag_t>(t) * kSignalsPerThread + i));
  });
  EXPECT_EQ(g_calls.load(), kTotal);
  uint64_t n = kTotal;
  EXPECT_EQ(g_tag_sum.load(), n * (n - 1) / 2);
  lci::free_comp(&h);
}

// ---------------------------------------------------------------------------
// counter

TEST_F(LciTest, CounterGetSet)
{
  lci::comp_t c = lci::alloc_counter();
  EXPECT_EQ(lci::counter_get(c), 0);
  for (int i = 0; i < 3; ++i) lci::comp_signal(c, make_status(i));
  EXPECT_EQ(lci::counter_get(c), 3);
  lci::counter_set(c, 100);
  EXPECT_EQ(lci::counter_get(c), 100);
  lci::comp_signal(c, make_status(0));
  EXPECT_EQ(lci::counter_get(c), 101);
  lci::counter_set(c, -5);
  EXPECT_EQ(lci::counter_get(c), -5);
  lci::comp_signal(c, make_status(0));
  EXPECT_EQ(lci::counter_get(c), -4);
  lci::free_comp(&c);
}

TEST_F(LciTest, CounterManyThreads)
{
  lci::comp_t c = lci::alloc_counter();
  lci::counter_set(c, 7);
  run_threads([&](int t) {
    for (int i = 0; i < kSignalsPerThread; ++i)
      lci::comp_signal(c, make_status(t));
  });
  EXPECT_EQ(lci::counter_get(c), 7 + kTotal);
  lci::free_comp(&c);
}

// A counter as the completion of real receives.
TEST_F(LciTest, CounterCountsReceives)
{
  lci::comp_t c = lci::alloc_counter();
  const int n = 30;
  std::vector<std::vector<char>> bufs(n, std::vector<char>(8));
  for (int i = 0; i < n; ++i)
    ASSERT_TRUE(lci::post_recv(0, bufs[i].data(), 8, 600 + i, c).is_posted());
  EXPECT_EQ(lci::counter_get(c), 0);
  for (int i = 0; i < n; ++i) {
    uint64_t v = 1000 + i;
    ASSERT_TRUE(lci::post_send(0, &v, 8, 600 + i, lci::COMP_NULL).is_done());
  }
  ASSERT_TRUE(
      lci_test::progress_until([&] { return lci::counter_get(c) >= n; }));
  lci_test::progress_for(std::chrono::milliseconds(50));
  EXPECT_EQ(lci::counter_get(c), n);
  for (int i = 0; i < n; ++i) {
    uint64_t v;
    std::memcpy(&v, bufs[i].data(), 8);
    EXPECT_EQ(v, 1000u + i);
  }
  lci::free_comp(&c);
}

}  // namespace
