// Many threads communicating at once: all on the shared default device, or
// each on a device of its own. Every message must arrive exactly once with
// its payload; retries are answered with progress and a new post.
#include <atomic>
#include <thread>

#include "lci_test_common.hpp"

namespace
{

using lci_test::fill_pattern;
using lci_test::first_pattern_mismatch;
using lci_test::LciTest;

constexpr int kThreads = 8;
constexpr int kMsgs = 2000;  // per thread
constexpr int kWindow = 25;  // receives in flight per thread

lci::tag_t make_tag(int thread, int i)
{
  return (static_cast<lci::tag_t>(thread) << 32) | static_cast<uint32_t>(i);
}

uint64_t make_seed(int thread, int i)
{
  return static_cast<uint64_t>(thread) * 1000003u + i;
}

// Message sizes cycle over both protocols, 0 and the limits included.
std::vector<size_t> message_sizes()
{
  size_t inject = lci::get_g_runtime().get_attr_max_inject_size();
  size_t eager = lci::get_max_bcopy_size();
  return {0, 1, 8, inject, inject + 1, 1000, eager};
}

struct thread_result_t {
  int received = 0;
  int duplicates = 0;
  int bad_status = 0;
  int bad_payload = 0;
  int unknown = 0;
  int retries = 0;
  bool timed_out = false;
  std::string first_error;
};

// One thread's work: windows of kWindow messages to self; the receives are
// posted before the sends in even windows, after them in odd windows (the
// unexpected-message path). `device` empty: the default device.
thread_result_t run_messages(int tid, lci::device_t device)
{
  thread_result_t res;
  const std::vector<size_t> sizes = message_sizes();
  const size_t max_size = lci::get_max_bcopy_size();
  lci::comp_t cq = lci::alloc_cq();
  std::vector<std::vector<unsigned char>> inbox(
      kWindow, std::vector<unsigned char>(max_size));
  std::vector<unsigned char> out(max_size);
  std::vector<int> got(kMsgs, 0);
  auto size_of = [&](int i) { return sizes[(i + tid) % sizes.size()]; };
  auto progress = [&] { lci::progress_x().device(device)(); };
  auto note = [&](const std::string& what) {
    if (res.first_error.empty()) res.first_error = what;
  };

  auto complete = [&](const lci::status_t& s) {
    auto* slot = static_cast<std::vector<unsigned char>*>(s.user_context);
    if (static_cast<int>(s.tag >> 32) != tid) {
      ++res.unknown;
      note("a status of another thread's tag");
      return;
    }
    int i = static_cast<int>(s.tag & 0xffffffffu);
    if (i < 0 || i >= kMsgs || slot == nullptr) {
      ++res.unknown;
      note("a status with an unknown tag");
      return;
    }
    if (++got[i] > 1) {
      ++res.duplicates;
      note("message " + std::to_string(i) + " completed twice");
      return;
    }
    ++res.received;
    if (!s.is_done() || s.rank != 0 || s.size != size_of(i) ||
        s.buffer != slot->data()) {
      ++res.bad_status;
      note("message " + std::to_string(i) + ": wrong status fields");
    }
    if (first_pattern_mismatch(slot->data(), s.size, make_seed(tid, i)) != -1) {
      ++res.bad_payload;
      note("message " + std::to_string(i) + ": wrong payload");
    }
  };

  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (int base = 0; base < kMsgs && !res.timed_out; base += kWindow) {
    const int n = std::min(kWindow, kMsgs - base);
    int pending = 0;
    auto post_recvs = [&] {
      for (int j = 0; j < n; ++j) {
        lci::status_t s;
        do {
          s = lci::post_recv_x(0, inbox[j].data(), max_size,
                               make_tag(tid, base + j), cq)
                  .device(device)
                  .user_context(&inbox[j])();
          if (s.is_retry()) {
            ++res.retries;
            progress();
          }
        } while (s.is_retry());
        if (s.is_done())
          complete(s);
        else
          ++pending;
      }
    };
    auto post_sends = [&] {
      for (int j = 0; j < n; ++j) {
        const int i = base + j;
        const size_t size = size_of(i);
        fill_pattern(out.data(), size, make_seed(tid, i));
        lci::status_t s;
        do {
          s = lci::post_send_x(0, out.data(), size, make_tag(tid, i),
                               lci::COMP_NULL_RETRY)
                  .device(device)();
          if (s.is_retry()) {
            ++res.retries;
            progress();
          }
        } while (s.is_retry());
        if (!s.is_done()) {
          ++res.bad_status;
          note("a COMP_NULL_RETRY send returned " +
               std::string(s.error.get_str()));
        }
      }
    };
    bool recv_first = (base / kWindow) % 2 == 0;
    if (recv_first) {
      post_recvs();
      post_sends();
    } else {
      post_sends();
      post_recvs();
    }
    while (pending > 0) {
      lci::status_t s = lci::cq_pop(cq);
      if (s.is_retry()) {
        progress();
        if (std::chrono::steady_clock::now() > deadline) {
          res.timed_out = true;
          break;
        }
        continue;
      }
      --pending;
      complete(s);
    }
  }
  // nothing more may arrive for this thread
  for (int k = 0; k < 1000; ++k) progress();
  lci::status_t extra = lci::cq_pop(cq);
  if (!extra.is_retry()) {
    ++res.duplicates;
    note("an extra completion after all messages");
  }
  lci::free_comp(&cq);
  return res;
}

void check_results(const std::vector<thread_result_t>& results)
{
  long retries = 0;
  for (int t = 0; t < kThreads; ++t) {
    SCOPED_TRACE("thread " + std::to_string(t));
    const thread_result_t& r = results[t];
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.received, kMsgs);
    EXPECT_EQ(r.duplicates, 0);
    EXPECT_EQ(r.bad_status, 0);
    EXPECT_EQ(r.bad_payload, 0);
    EXPECT_EQ(r.unknown, 0);
    EXPECT_EQ(r.first_error, "");
    retries += r.retries;
  }
  ::testing::Test::RecordProperty("retries", static_cast<int>(retries));
}

void threads_share_one_device()
{
  std::vector<thread_result_t> results(kThreads);
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        results[t] = run_messages(t, lci::device_t());
      } catch (const std::exception& e) {
        results[t].first_error = e.what();
        ++errors;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  check_results(results);
  lci_test::expect_sendrecv_works();
}

TEST_F(LciTest, ThreadsShareOneDevice) { threads_share_one_device(); }

// The same on the native shm backend: the threads are the producers and the
// consumer of the process's own ring at once, so the doorbell protocol
// (src/net/shm/shm.cpp) runs between threads, where ThreadSanitizer sees
// both sides (the tsan stage runs this binary).
TEST(LciNative, ThreadsShareOneDevice)
{
  lci::g_runtime_init_x().backend("shm")();
  ASSERT_EQ(lci::get_g_runtime().get_attr_backend(), "shm");
  threads_share_one_device();
  lci::g_runtime_fina();
}

TEST_F(LciTest, ThreadsWithOwnDevices)
{
  std::vector<thread_result_t> results(kThreads);
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        lci::device_t dev = lci::alloc_device();
        if (dev.is_empty() || dev == lci::get_default_device()) {
          results[t].first_error = "alloc_device gave no device of its own";
          return;
        }
        results[t] = run_messages(t, dev);
        lci::free_device(&dev);
        if (!dev.is_empty()) results[t].first_error = "handle not cleared";
      } catch (const std::exception& e) {
        results[t].first_error = e.what();
        ++errors;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  check_results(results);
  lci_test::expect_sendrecv_works();
}

// Active messages from every thread into one completion queue, popped by
// whichever thread gets there: each arrives exactly once.
TEST_F(LciTest, ThreadsSendActiveMessagesToOneQueue)
{
  constexpr int kAms = 1000;  // per thread
  lci::comp_t cq = lci::alloc_cq();
  lci::rcomp_t rc = lci::register_rcomp(cq);
  std::vector<std::atomic<int>> seen(kThreads * kAms);
  for (auto& s : seen) s = 0;
  std::atomic<int> popped{0}, bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      auto consume = [&] {
        lci::status_t s = lci::cq_pop(cq);
        if (s.is_retry()) return;
        size_t id = s.tag;
        if (id >= seen.size() || s.size != 8 + id % 50 ||
            first_pattern_mismatch(s.buffer, s.size, id) != -1)
          ++bad;
        else
          seen[id].fetch_add(1);
        std::free(s.buffer);
        popped.fetch_add(1);
      };
      std::vector<unsigned char> out(64);
      for (int i = 0; i < kAms; ++i) {
        size_t id = static_cast<size_t>(t) * kAms + i;
        size_t size = 8 + id % 50;
        fill_pattern(out.data(), size, id);
        lci::status_t s;
        while (
            (s = lci::post_am_x(0, out.data(), size, lci::COMP_NULL_RETRY, rc)
                     .tag(id)())
                .is_retry()) {
          lci::progress();
          consume();
        }
        if (!s.is_done()) ++bad;
        lci::progress();
        consume();
      }
      auto deadline = std::chrono::steady_clock::now() + lci_test::kWaitLimit;
      while (popped.load() < kThreads * kAms &&
             std::chrono::steady_clock::now() < deadline) {
        lci::progress();
        consume();
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(popped.load(), kThreads * kAms);
  int once = 0;
  for (auto& s : seen) once += s.load() == 1;
  EXPECT_EQ(once, kThreads * kAms);
  lci_test::progress_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(lci::cq_pop(cq).is_retry());
  lci::deregister_rcomp(rc);
  lci::free_comp(&cq);
}

// Attentive progress (runtime attribute): a message lands on device b,
// whose owner never progresses it; progress calls on device a deliver it only
// when the runtime is attentive (an idle device's progress polls another).
TEST_F(LciTest, AttentiveProgressPollsAnotherDevice)
{
  for (bool attentive : {false, true}) {
    SCOPED_TRACE(attentive ? "attentive" : "not attentive");
    lci::runtime_t rt = lci::alloc_runtime_x().attentive_progress(attentive)();
    EXPECT_EQ(rt.get_attr_attentive_progress(), attentive);
    lci::device_t a = lci::alloc_device_x().runtime(rt)();
    lci::device_t b = lci::alloc_device_x().runtime(rt)();
    lci::comp_t sync = lci::alloc_sync();
    const size_t size = 32;
    std::vector<unsigned char> out(size), in(size);
    fill_pattern(out.data(), size, 77);
    ASSERT_TRUE(lci::post_recv_x(0, in.data(), size, 77, sync)
                    .runtime(rt)
                    .device(b)()
                    .is_posted());
    ASSERT_TRUE(lci_test::post_retry(
                    [&] {
                      return lci::post_send_x(0, out.data(), size, 77,
                                              lci::COMP_NULL_RETRY)
                          .runtime(rt)
                          .device(b)();
                    },
                    b, rt)
                    .is_done());
    auto ready = [&] { return lci::sync_test(sync, nullptr); };
    if (attentive) {
      EXPECT_TRUE(lci_test::progress_until(ready, a, rt));
      EXPECT_EQ(first_pattern_mismatch(in.data(), size, 77), -1);
    } else {
      lci_test::progress_for(std::chrono::milliseconds(200), a, rt);
      EXPECT_FALSE(ready());
      EXPECT_TRUE(lci_test::progress_until(ready, b, rt));  // the owner
    }
    lci::free_comp(&sync);
    lci::free_device(&b);
    lci::free_device(&a);
    lci::free_runtime(&rt);
  }
}

// Devices come and go while another thread's attentive progress polls them:
// free_device waits until no poller holds the device it frees.
TEST_F(LciTest, AttentiveProgressWhileDevicesAreFreed)
{
  lci::runtime_t rt = lci::alloc_runtime_x().attentive_progress(true)();
  lci::device_t a = lci::alloc_device_x().runtime(rt)();
  std::atomic<bool> stop{false};
  std::atomic<long> calls{0};
  std::thread poller([&] {
    while (!stop.load()) {
      lci::progress_x().device(a).runtime(rt)();
      calls.fetch_add(1, std::memory_order_relaxed);
    }
  });
  for (int i = 0; i < 50; ++i) {
    lci::device_t d = lci::alloc_device_x().runtime(rt)();
    long before = calls.load();
    while (calls.load() < before + 20) std::this_thread::yield();
    lci::free_device(&d);
  }
  stop = true;
  poller.join();
  lci::free_device(&a);
  lci::free_runtime(&rt);
}

}  // namespace
