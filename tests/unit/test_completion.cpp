// Completion semantics, to self: comp_semantic memory vs network,
// test_drained / wait_drained, counters and user completion objects as local
// and remote completions, user_context on every completion path, and user
// packets (get_upacket / put_upacket).
#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "lci_test_common.hpp"

namespace
{

using lci_test::fill_pattern;
using lci_test::first_pattern_mismatch;
using lci_test::LciTest;
using lci_test::pop_wait;
using ::testing::AllOf;
using ::testing::HasSubstr;

const lci::comp_semantic_t kNetwork = lci::comp_semantic_t::network;

static_assert(lci::comp_semantic_t::buffer == lci::comp_semantic_t::memory,
              "buffer is the LCI 2.x name of memory");

// The boundary sizes of the inject and eager protocols.
std::vector<size_t> boundary_sizes()
{
  size_t inject = lci::get_g_runtime().get_attr_max_inject_size();
  return {0, 1, 8, inject, inject + 1, lci::get_max_bcopy_size()};
}

// A user completion object that records every status it is given.
class recording_comp_t : public lci::comp_impl_t
{
 public:
  void signal(lci::status_t s) override
  {
    std::lock_guard<std::mutex> g(mu_);
    statuses_.push_back(s);
  }
  std::vector<lci::status_t> take()
  {
    std::lock_guard<std::mutex> g(mu_);
    std::vector<lci::status_t> out;
    out.swap(statuses_);
    return out;
  }
  size_t count()
  {
    std::lock_guard<std::mutex> g(mu_);
    return statuses_.size();
  }

 private:
  std::mutex mu_;
  std::vector<lci::status_t> statuses_;
};

// Receives the message with `tag` (blocking) and checks its payload.
void expect_received(lci::tag_t tag, size_t size, uint64_t seed,
                     lci::device_t device = lci::device_t())
{
  std::vector<unsigned char> in(size + 8, 0);
  lci::status_t r =
      lci::post_recv_x(0, in.data(), in.size(), tag, lci::COMP_NULL)
          .device(device)();
  ASSERT_TRUE(r.is_done()) << r.error.get_str();
  EXPECT_EQ(r.size, size) << "tag " << tag;
  EXPECT_EQ(first_pattern_mismatch(in.data(), size, seed), -1) << "tag " << tag;
}

// ---------------------------------------------------------------------------
// comp_semantic

// memory (the default, also spelled buffer): a buffer-copy send is complete
// on return.
TEST_F(LciTest, CompSemanticMemorySendsAreDoneAtOnce)
{
  lci::comp_t cq = lci::alloc_cq();
  for (size_t size : boundary_sizes()) {
    std::vector<unsigned char> out(size + 1);
    fill_pattern(out.data(), size, size);
    for (lci::comp_semantic_t sem :
         {lci::comp_semantic_t::memory, lci::comp_semantic_t::buffer}) {
      lci::status_t s = lci_test::post_retry([&] {
        return lci::post_send_x(0, out.data(), size, 7, cq)
            .comp_semantic(sem)();
      });
      EXPECT_TRUE(s.is_done()) << size << ": " << s.error.get_str();
      expect_received(7, size, size);
    }
  }
  lci_test::progress_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(lci::cq_pop(cq).is_retry()) << "a done send was signalled";
  lci::free_comp(&cq);
}

// network: never done at once; the completion object is signalled exactly
// once with the send's status when the network reports completion, for
// sends and active messages of every eager size (inject sizes included).
class NetworkSemantic : public LciTest,
                        public ::testing::WithParamInterface<bool>
{
};

TEST_P(NetworkSemantic, PostedThenSignalledOnceWithTheStatus)
{
  const bool am = GetParam();
  lci::comp_t local = lci::alloc_cq();
  lci::comp_t target = lci::alloc_cq();
  lci::rcomp_t rcomp = lci::register_rcomp(target);
  for (size_t size : boundary_sizes()) {
    const lci::tag_t tag = 300 + size;
    const uint64_t seed = 9000 + size;
    std::vector<unsigned char> out(size + 1);
    fill_pattern(out.data(), size, seed);
    int ctx = 0;
    lci::status_t s = lci_test::post_retry([&] {
      return lci::post_comm_x(lci::direction_t::OUT, 0, out.data(), size, local)
          .tag(tag)
          .remote_comp(am ? rcomp : lci::RCOMP_NULL)
          .user_context(&ctx)
          .comp_semantic(kNetwork)();
    });
    ASSERT_TRUE(s.is_posted()) << size << ": " << s.error.get_str();
    lci::status_t c = pop_wait(local);
    ASSERT_TRUE(c.is_done()) << size << ": no network completion";
    EXPECT_EQ(c.rank, 0);
    EXPECT_EQ(c.tag, tag);
    EXPECT_EQ(c.size, size);
    EXPECT_EQ(c.buffer, out.data());
    EXPECT_EQ(c.user_context, &ctx);
    if (am) {
      lci::status_t t = pop_wait(target);
      ASSERT_TRUE(t.is_done()) << size << ": the active message never came";
      EXPECT_EQ(t.size, size);
      EXPECT_EQ(t.tag, tag);
      EXPECT_EQ(first_pattern_mismatch(t.buffer, size, seed), -1);
      std::free(t.buffer);
    } else {
      expect_received(tag, size, seed);
    }
  }
  lci_test::progress_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(lci::cq_pop(local).is_retry()) << "signalled more than once";
  EXPECT_TRUE(lci::cq_pop(target).is_retry()) << "delivered more than once";
  lci::deregister_rcomp(rcomp);
  lci::free_comp(&local);
  lci::free_comp(&target);
}

INSTANTIATE_TEST_SUITE_P(SendAndAm, NetworkSemantic, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return std::string(info.param ? "ActiveMessage"
                                                         : "Send");
                         });

// COMP_NULL (and allow_posted(false)) with network: the call blocks until
// the network completion and returns done; nothing is signalled.
TEST_F(LciTest, CompSemanticNetworkBlockingCalls)
{
  const size_t size = 100;
  std::vector<unsigned char> out(size);
  fill_pattern(out.data(), size, 5);
  int ctx = 0;
  lci::status_t s = lci::post_send_x(0, out.data(), size, 5, lci::COMP_NULL)
                        .comp_semantic(kNetwork)
                        .user_context(&ctx)();
  ASSERT_TRUE(s.is_done()) << s.error.get_str();
  EXPECT_EQ(s.size, size);
  EXPECT_EQ(s.tag, 5u);
  EXPECT_EQ(s.buffer, out.data());
  EXPECT_EQ(s.user_context, &ctx);
  expect_received(5, size, 5);

  lci::comp_t cq = lci::alloc_cq();
  s = lci::post_send_x(0, out.data(), size, 6, cq)
          .comp_semantic(kNetwork)
          .allow_posted(false)();
  ASSERT_TRUE(s.is_done()) << s.error.get_str();
  EXPECT_EQ(s.tag, 6u);
  expect_received(6, size, 5);
  lci_test::progress_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(lci::cq_pop(cq).is_retry()) << "a blocking call signalled";
  lci::free_comp(&cq);
}

// A receive completes when its data is in the buffer; comp_semantic does
// not change that.
TEST_F(LciTest, CompSemanticDoesNotChangeReceives)
{
  const size_t size = 64;
  std::vector<unsigned char> out(size), in(size);
  fill_pattern(out.data(), size, 11);
  lci::comp_t cq = lci::alloc_cq();
  lci::status_t r =
      lci::post_recv_x(0, in.data(), size, 11, cq).comp_semantic(kNetwork)();
  ASSERT_TRUE(r.is_posted()) << r.error.get_str();
  ASSERT_TRUE(
      lci::post_send(0, out.data(), size, 11, lci::COMP_NULL).is_done());
  lci::status_t c = pop_wait(cq);
  ASSERT_TRUE(c.is_done());
  EXPECT_EQ(c.size, size);
  EXPECT_EQ(first_pattern_mismatch(in.data(), size, 11), -1);
  lci::free_comp(&cq);
}

// A network send that meets an empty packet pool with allow_retry(false)
// goes to the backlog: posted_backlog, the buffer is free at once, and the
// completion (naming the user's buffer) comes when the queued copy has
// completed on the network.
TEST_F(LciTest, CompSemanticNetworkThroughTheBacklog)
{
  lci::packet_pool_t pool = lci::alloc_packet_pool_x().npackets(1)();
  const size_t size = 500;
  std::vector<unsigned char> a(size), b(size);
  fill_pattern(a.data(), size, 21);
  fill_pattern(b.data(), size, 22);
  recording_comp_t rec;
  lci::comp_t comp(&rec);
  int ctx_a = 0, ctx_b = 0;

  // the network send holds the pool's only packet until progress sees its
  // completion
  lci::status_t sa = lci_test::post_retry([&] {
    return lci::post_send_x(0, a.data(), size, 21, comp)
        .packet_pool(pool)
        .comp_semantic(kNetwork)
        .user_context(&ctx_a)();
  });
  ASSERT_TRUE(sa.is_posted()) << sa.error.get_str();
  lci::status_t sb = lci::post_send_x(0, b.data(), size, 22, comp)
                         .packet_pool(pool)
                         .comp_semantic(kNetwork)
                         .user_context(&ctx_b)
                         .allow_retry(false)();
  ASSERT_EQ(sb.error.errorcode, lci::errorcode_t::posted_backlog)
      << sb.error.get_str();
  EXPECT_EQ(rec.count(), 0u) << "signalled before the network completed";
  std::vector<unsigned char> b_orig = b;
  std::fill(b.begin(), b.end(), 0);  // the buffer is the user's again

  ASSERT_TRUE(lci_test::progress_until([&] { return rec.count() >= 2; }));
  lci_test::progress_for(std::chrono::milliseconds(50));
  std::vector<lci::status_t> st = rec.take();
  ASSERT_EQ(st.size(), 2u);
  for (const lci::status_t& s : st) {
    EXPECT_TRUE(s.is_done());
    EXPECT_EQ(s.size, size);
    if (s.tag == 21) {
      EXPECT_EQ(s.user_context, &ctx_a);
      EXPECT_EQ(s.buffer, a.data());
    } else {
      EXPECT_EQ(s.tag, 22u);
      EXPECT_EQ(s.user_context, &ctx_b);
      EXPECT_EQ(s.buffer, b.data()) << "the status names the backlog's copy";
    }
  }
  expect_received(21, size, 21);
  expect_received(22, size, 22);
  lci::free_packet_pool(&pool);
}

TEST_F(LciTest, CompSemanticBadArguments)
{
  char buf[8] = {};
  // COMP_NULL_RETRY signals nothing: network semantics are memory's then,
  // done once the buffer is free (a receive takes the message)
  lci::status_t st = lci_test::post_retry([&] {
    return lci::post_send_x(0, buf, sizeof(buf), 77, lci::COMP_NULL_RETRY)
        .comp_semantic(kNetwork)();
  });
  EXPECT_TRUE(st.is_done()) << st.error.get_str();
  char in[8];
  lci::comp_t sync = lci::alloc_sync();
  st = lci::post_recv(0, in, sizeof(in), 77, sync);
  if (st.is_posted()) lci::sync_wait(sync, &st);
  EXPECT_TRUE(st.is_done());
  lci::free_comp(&sync);
  std::string msg = lci_test::fatal_message([&] {
    lci::post_send_x(0, buf, sizeof(buf), 1, lci::COMP_NULL)
        .comp_semantic(static_cast<lci::comp_semantic_t>(7))();
  });
  EXPECT_THAT(msg, AllOf(HasSubstr("post_comm"), HasSubstr("comp_semantic 7")));
  lci_test::expect_sendrecv_works();
}

// ---------------------------------------------------------------------------
// test_drained / wait_drained

// Sends whose packet is in flight keep the device from being drained until
// progress has seen their completions; posted receives and unexpected
// messages do not count.
TEST_F(LciTest, DrainedCountsSendsInFlightNotReceives)
{
  LCI_SKIP_IF_SENDS_COPY();
  EXPECT_TRUE(lci::test_drained().is_done()) << "a fresh device is drained";
  const size_t size = 1000;  // eager: each send holds a packet
  ASSERT_GT(size, lci::get_g_runtime().get_attr_max_inject_size());
  std::vector<unsigned char> out(size);
  fill_pattern(out.data(), size, 3);
  // a receive that waits for a peer does not keep the device busy
  std::vector<unsigned char> in(size);
  lci::comp_t rcq = lci::alloc_cq();
  ASSERT_TRUE(lci::post_recv(0, in.data(), size, 99, rcq).is_posted());
  EXPECT_TRUE(lci::test_drained().is_done());

  constexpr int kSends = 20;
  for (int i = 0; i < kSends; ++i) {
    lci::status_t s = lci_test::post_retry(
        [&] { return lci::post_send(0, out.data(), size, 3, lci::COMP_NULL); });
    ASSERT_TRUE(s.is_done()) << s.error.get_str();
    // no progress yet: the send's completion has not been seen
    EXPECT_TRUE(lci::test_drained().is_retry()) << "send " << i;
  }
  lci::wait_drained();
  EXPECT_TRUE(lci::test_drained().is_done());
  // the messages are now unexpected: still drained
  lci_test::progress_until_quiet();
  EXPECT_TRUE(lci::test_drained().is_done());
  for (int i = 0; i < kSends; ++i) expect_received(3, size, 3);

  // the waiting receive completes, and the device stays drained
  ASSERT_TRUE(
      lci::post_send(0, out.data(), size, 99, lci::COMP_NULL).is_done());
  ASSERT_TRUE(pop_wait(rcq).is_done());
  lci::wait_drained();
  EXPECT_TRUE(lci::test_drained().is_done());
  lci::free_comp(&rcq);
}

// The backlog counts; when wait_drained returns, every completion of the
// drained sends has been signalled.
TEST_F(LciTest, DrainedCountsTheBacklogAndSignalsComeFirst)
{
  LCI_SKIP_IF_SENDS_COPY();
  lci::packet_pool_t pool = lci::alloc_packet_pool_x().npackets(1)();
  const size_t size = 300;
  std::vector<unsigned char> out(size);
  fill_pattern(out.data(), size, 4);
  recording_comp_t rec;
  lci::comp_t comp(&rec);
  ASSERT_TRUE(lci_test::post_retry([&] {
                return lci::post_send_x(0, out.data(), size, 41, comp)
                    .packet_pool(pool)
                    .comp_semantic(kNetwork)();
              }).is_posted());
  lci::status_t s = lci::post_send_x(0, out.data(), size, 42, comp)
                        .packet_pool(pool)
                        .allow_done(false)
                        .allow_retry(false)();
  ASSERT_EQ(s.error.errorcode, lci::errorcode_t::posted_backlog);
  EXPECT_TRUE(lci::test_drained().is_retry());
  lci::wait_drained();
  EXPECT_TRUE(lci::test_drained().is_done());
  // no progress in between: the signals came before the drain
  EXPECT_EQ(rec.count(), 2u);
  expect_received(41, size, 4);
  expect_received(42, size, 4);
  lci::free_packet_pool(&pool);
}

// device and runtime select what is tested: another device, another runtime.
TEST_F(LciTest, DrainedPerDeviceAndPerRuntime)
{
  LCI_SKIP_IF_SENDS_COPY();
  const size_t size = 1000;
  std::vector<unsigned char> out(size);
  fill_pattern(out.data(), size, 6);

  lci::device_t dev = lci::alloc_device();
  ASSERT_TRUE(lci_test::post_retry(
                  [&] {
                    return lci::post_send_x(0, out.data(), size, 6,
                                            lci::COMP_NULL_RETRY)
                        .device(dev)();
                  },
                  dev)
                  .is_done());
  EXPECT_TRUE(lci::test_drained_x().device(dev)().is_retry());
  EXPECT_TRUE(lci::test_drained().is_done()) << "the default device is idle";
  lci::wait_drained_x().device(dev)();
  EXPECT_TRUE(lci::test_drained_x().device(dev)().is_done());
  expect_received(6, size, 6, dev);

  lci::runtime_t rt = lci::alloc_runtime();
  ASSERT_TRUE(lci_test::post_retry(
                  [&] {
                    return lci::post_send_x(0, out.data(), size, 6,
                                            lci::COMP_NULL_RETRY)
                        .runtime(rt)();
                  },
                  lci::device_t(), rt)
                  .is_done());
  EXPECT_TRUE(lci::test_drained_x().runtime(rt)().is_retry());
  EXPECT_TRUE(lci::test_drained().is_done());
  lci::wait_drained_x().runtime(rt)();
  EXPECT_TRUE(lci::test_drained_x().runtime(rt)().is_done());
  {
    std::vector<unsigned char> in(size);
    lci::status_t r =
        lci::post_recv_x(0, in.data(), size, 6, lci::COMP_NULL).runtime(rt)();
    ASSERT_TRUE(r.is_done());
    EXPECT_EQ(first_pattern_mismatch(in.data(), size, 6), -1);
  }
  lci::free_runtime(&rt);
  lci::free_device(&dev);

  // a runtime without a default device has nothing to test
  lci::runtime_t bare = lci::alloc_runtime_x().alloc_default_device(false)();
  EXPECT_THAT(
      lci_test::fatal_message([&] { lci::test_drained_x().runtime(bare)(); }),
      HasSubstr("test_drained"));
  EXPECT_THAT(
      lci_test::fatal_message([&] { lci::wait_drained_x().runtime(bare)(); }),
      HasSubstr("wait_drained"));
  lci::free_runtime(&bare);
}

// ---------------------------------------------------------------------------
// counters as local and remote completions

// A counter as the local completion counts exactly the posts that were
// posted (signalled), never the ones that were done.
TEST_F(LciTest, CounterAsLocalCompletion)
{
  lci::comp_t counter = lci::alloc_counter();
  const size_t size = 200;
  std::vector<unsigned char> out(size);
  fill_pattern(out.data(), size, 12);
  constexpr int kEach = 50;
  int posted = 0;
  for (int i = 0; i < kEach; ++i) {
    // done: not counted
    lci::status_t s = lci_test::post_retry(
        [&] { return lci::post_send(0, out.data(), size, 12, counter); });
    ASSERT_TRUE(s.is_done());
    // allow_done(false) and network: posted, counted once each
    s = lci_test::post_retry([&] {
      return lci::post_send_x(0, out.data(), size, 12, counter)
          .allow_done(false)();
    });
    ASSERT_TRUE(s.is_posted());
    ++posted;
    s = lci_test::post_retry([&] {
      return lci::post_send_x(0, out.data(), size, 12, counter)
          .comp_semantic(kNetwork)();
    });
    ASSERT_TRUE(s.is_posted());
    ++posted;
  }
  // posted receives count too
  std::vector<std::vector<unsigned char>> in(3 * kEach,
                                             std::vector<unsigned char>(size));
  int recvs = 0;
  for (auto& b : in) {
    lci::status_t r = lci::post_recv(0, b.data(), size, 12, counter);
    if (r.is_posted()) ++recvs;
  }
  ASSERT_TRUE(lci_test::progress_until(
      [&] { return lci::counter_get(counter) >= posted + recvs; }));
  lci::wait_drained();
  lci_test::progress_for(std::chrono::milliseconds(50));
  EXPECT_EQ(lci::counter_get(counter), posted + recvs);
  for (auto& b : in) EXPECT_EQ(first_pattern_mismatch(b.data(), size, 12), -1);
  lci::free_comp(&counter);
}

// A counter as the remote completion of active messages counts arrivals,
// from several threads, of every size (the payload is not kept: nothing to
// free, nothing leaks).
TEST_F(LciTest, CounterAsRemoteCompletion)
{
  lci::comp_t counter = lci::alloc_counter();
  lci::rcomp_t rcomp = lci::register_rcomp(counter);
  const std::vector<size_t> sizes = boundary_sizes();
  constexpr int kThreads = 4, kPerThread = 60;
  std::vector<unsigned char> out(lci::get_max_bcopy_size());
  fill_pattern(out.data(), out.size(), 1);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        size_t size = sizes[(t + i) % sizes.size()];
        lci::status_t s;
        do {
          s = lci::post_am(0, out.data(), size, lci::COMP_NULL_RETRY, rcomp);
          lci::progress();
        } while (s.is_retry());
      }
    });
  for (auto& th : threads) th.join();
  const int64_t total = kThreads * kPerThread;
  ASSERT_TRUE(lci_test::progress_until(
      [&] { return lci::counter_get(counter) >= total; }));
  lci_test::progress_for(std::chrono::milliseconds(50));
  EXPECT_EQ(lci::counter_get(counter), total);
  lci::deregister_rcomp(rcomp);
  lci::free_comp(&counter);
}

// ---------------------------------------------------------------------------
// user completion objects (subclasses of comp_impl_t), local and remote

// A subclass that counts signals per tag and frees active-message buffers
// after checking them.
class checking_comp_t : public lci::comp_impl_t
{
 public:
  explicit checking_comp_t(bool owns_buffers) : owns_(owns_buffers) {}
  void signal(lci::status_t s) override
  {
    bool ok =
        s.is_done() && s.rank == 0 &&
        (s.size == 0 || first_pattern_mismatch(s.buffer, s.size, s.tag) == -1);
    if (owns_) std::free(s.buffer);
    std::lock_guard<std::mutex> g(mu_);
    ++per_tag_[s.tag];
    if (!ok) ++bad_;
    ++total_;
  }
  int total()
  {
    std::lock_guard<std::mutex> g(mu_);
    return total_;
  }
  int bad()
  {
    std::lock_guard<std::mutex> g(mu_);
    return bad_;
  }
  int count(lci::tag_t tag)
  {
    std::lock_guard<std::mutex> g(mu_);
    return per_tag_[tag];
  }

 private:
  bool owns_;
  std::mutex mu_;
  std::map<lci::tag_t, int> per_tag_;
  int bad_ = 0, total_ = 0;
};

// Several threads send active messages (one tag per message) whose local
// completion is one user object and whose remote completion is another:
// every message is signalled exactly once on each side, with its payload.
TEST_F(LciTest, UserCompletionObjectLocalAndRemoteFromThreads)
{
  checking_comp_t local(false), remote(true);
  lci::comp_t lcomp(&local);
  lci::rcomp_t rcomp = lci::register_rcomp(lci::comp_t(&remote));
  constexpr int kThreads = 4, kPerThread = 40;
  const std::vector<size_t> sizes = boundary_sizes();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        lci::tag_t tag = t * 1000 + i;
        size_t size = sizes[i % sizes.size()];
        std::vector<unsigned char> buf(size + 1);
        fill_pattern(buf.data(), size, tag);
        lci::status_t s;
        do {
          s = lci::post_am_x(0, buf.data(), size, lcomp, rcomp)
                  .tag(tag)
                  .allow_done(false)
                  .comp_semantic(i % 2 ? kNetwork
                                       : lci::comp_semantic_t::memory)();
          lci::progress();
        } while (s.is_retry());
        // network sends read the buffer until their completion: wait for it
        if (i % 2)
          while (local.count(tag) == 0) lci::progress();
      }
    });
  for (auto& th : threads) th.join();
  const int total = kThreads * kPerThread;
  ASSERT_TRUE(lci_test::progress_until(
      [&] { return local.total() >= total && remote.total() >= total; }));
  lci_test::progress_for(std::chrono::milliseconds(50));
  EXPECT_EQ(local.total(), total);
  EXPECT_EQ(remote.total(), total);
  EXPECT_EQ(remote.bad(), 0) << "wrong payload or status at the target";
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kPerThread; ++i) {
      EXPECT_EQ(local.count(t * 1000 + i), 1);
      EXPECT_EQ(remote.count(t * 1000 + i), 1);
    }
  lci::deregister_rcomp(rcomp);
}

// ---------------------------------------------------------------------------
// user_context reaches every completion

TEST_F(LciTest, UserContextOnEveryCompletionPath)
{
  LCI_SKIP_IF_SENDS_COPY();
  recording_comp_t rec;
  lci::comp_t comp(&rec);
  lci::comp_t target = lci::alloc_cq();
  lci::rcomp_t rcomp = lci::register_rcomp(target);
  lci::packet_pool_t tiny = lci::alloc_packet_pool_x().npackets(1)();
  const size_t small = 8, eager = 1000;
  std::vector<unsigned char> out(eager);
  fill_pattern(out.data(), eager, 1);
  std::vector<unsigned char> in(eager);
  int ctx[16];
  std::vector<void*> returned;  // contexts seen in returned statuses

  auto send = [&](size_t size, int k) {
    return lci::post_send_x(0, out.data(), size, 50 + k, comp)
        .user_context(&ctx[k]);
  };
  // 0: inject, done (returned status)
  lci::status_t s = lci_test::post_retry([&] { return send(small, 0)(); });
  ASSERT_TRUE(s.is_done());
  returned.push_back(s.user_context);
  // 1: eager, done
  s = lci_test::post_retry([&] { return send(eager, 1)(); });
  ASSERT_TRUE(s.is_done());
  returned.push_back(s.user_context);
  // 2, 3: allow_done(false), inject and eager (signalled)
  ASSERT_TRUE(lci_test::post_retry([&] {
                return send(small, 2).allow_done(false)();
              }).is_posted());
  ASSERT_TRUE(lci_test::post_retry([&] {
                return send(eager, 3).allow_done(false)();
              }).is_posted());
  // 4: network (signalled)
  ASSERT_TRUE(lci_test::post_retry([&] {
                return send(small, 4).comp_semantic(kNetwork)();
              }).is_posted());
  // 5: COMP_NULL, network (returned)
  s = lci::post_send_x(0, out.data(), small, 55, lci::COMP_NULL)
          .comp_semantic(kNetwork)
          .user_context(&ctx[5])();
  ASSERT_TRUE(s.is_done());
  returned.push_back(s.user_context);
  // 6, 7: through the backlog, memory and network (signalled)
  ASSERT_TRUE(lci_test::post_retry([&] {
                return send(eager, 15).packet_pool(tiny).comp_semantic(
                    kNetwork)();
              }).is_posted());  // holds the tiny pool's packet
  ASSERT_EQ(send(eager, 6)
                .packet_pool(tiny)
                .allow_done(false)
                .allow_retry(false)()
                .error.errorcode,
            lci::errorcode_t::posted_backlog);
  ASSERT_EQ(send(eager, 7)
                .packet_pool(tiny)
                .comp_semantic(kNetwork)
                .allow_retry(false)()
                .error.errorcode,
            lci::errorcode_t::posted_backlog);
  // 8: an active message's local completion (signalled); the target's
  // status carries no user_context
  ASSERT_TRUE(lci_test::post_retry([&] {
                return lci::post_am_x(0, out.data(), small, comp, rcomp)
                    .user_context(&ctx[8])
                    .allow_done(false)();
              }).is_posted());
  lci::status_t t = pop_wait(target);
  ASSERT_TRUE(t.is_done());
  EXPECT_EQ(t.user_context, nullptr);
  std::free(t.buffer);
  lci::wait_drained();

  // receives: 9 done (unexpected, returned), 10 blocking (returned)
  s = lci::post_recv_x(0, in.data(), eager, 50, comp).user_context(&ctx[9])();
  ASSERT_TRUE(s.is_done());
  returned.push_back(s.user_context);
  s = lci::post_recv_x(0, in.data(), eager, 51, lci::COMP_NULL)
          .user_context(&ctx[10])();
  ASSERT_TRUE(s.is_done());
  returned.push_back(s.user_context);
  // 11: a posted receive (signalled)
  ASSERT_TRUE(lci::post_recv_x(0, in.data(), eager, 61, comp)
                  .user_context(&ctx[11])()
                  .is_posted());
  ASSERT_TRUE(
      lci::post_send(0, out.data(), small, 61, lci::COMP_NULL).is_done());
  ASSERT_TRUE(lci_test::progress_until([&] { return rec.count() >= 7; }));
  lci_test::progress_for(std::chrono::milliseconds(20));

  std::vector<void*> signalled;
  for (const lci::status_t& st : rec.take())
    signalled.push_back(st.user_context);
  EXPECT_THAT(returned, ::testing::UnorderedElementsAre(
                            &ctx[0], &ctx[1], &ctx[5], &ctx[9], &ctx[10]));
  EXPECT_THAT(signalled, ::testing::UnorderedElementsAre(
                             &ctx[2], &ctx[3], &ctx[4], &ctx[6], &ctx[7],
                             &ctx[8], &ctx[11], &ctx[15]));
  // drain the matching engine: the messages nobody received yet
  for (int k : {2, 3, 4, 6, 7, 15}) {
    lci::status_t r =
        lci::post_recv(0, in.data(), eager, 50 + k, lci::COMP_NULL);
    EXPECT_TRUE(r.is_done()) << k;
  }
  lci::deregister_rcomp(rcomp);
  lci::free_comp(&target);
  lci::free_packet_pool(&tiny);
}

// ---------------------------------------------------------------------------
// user packets

// Gets a user packet, driving progress until the pool has one.
void* get_upacket_wait(lci::packet_pool_t pool = lci::packet_pool_t())
{
  void* p = nullptr;
  lci_test::progress_until([&] {
    p = lci::get_upacket_x().packet_pool(pool)();
    return p != nullptr;
  });
  return p;
}

// A user packet is filled in place and posted as the buffer of a send or an
// active message of any eager size, with either completion semantic.
class UserPacket : public LciTest,
                   public ::testing::WithParamInterface<std::tuple<bool, bool>>
{
};

TEST_P(UserPacket, FilledInPlaceAndSent)
{
  const bool am = std::get<0>(GetParam());
  const bool network = std::get<1>(GetParam());
  lci::comp_t local = lci::alloc_cq();
  lci::comp_t target = lci::alloc_cq();
  lci::rcomp_t rcomp = lci::register_rcomp(target);
  for (size_t size : boundary_sizes()) {
    const lci::tag_t tag = 700 + size;
    void* up = get_upacket_wait();
    ASSERT_NE(up, nullptr);
    fill_pattern(up, size, tag);
    int ctx = 0;
    lci::status_t s = lci_test::post_retry([&] {
      return lci::post_comm_x(lci::direction_t::OUT, 0, up, size, local)
          .tag(tag)
          .remote_comp(am ? rcomp : lci::RCOMP_NULL)
          .user_context(&ctx)
          .comp_semantic(network ? kNetwork : lci::comp_semantic_t::memory)();
    });
    if (network) {
      ASSERT_TRUE(s.is_posted()) << size << ": " << s.error.get_str();
      s = pop_wait(local);
    }
    ASSERT_TRUE(s.is_done()) << size << ": " << s.error.get_str();
    EXPECT_EQ(s.buffer, up);
    EXPECT_EQ(s.size, size);
    EXPECT_EQ(s.user_context, &ctx);
    // the packet is the library's now: giving it back is an error
    EXPECT_THAT(lci_test::fatal_message([&] { lci::put_upacket(up); }),
                HasSubstr("put_upacket"));
    if (am) {
      lci::status_t t = pop_wait(target);
      ASSERT_TRUE(t.is_done());
      EXPECT_EQ(t.size, size);
      EXPECT_EQ(first_pattern_mismatch(t.buffer, size, tag), -1);
      std::free(t.buffer);
    } else {
      expect_received(tag, size, tag);
    }
  }
  lci::wait_drained();
  EXPECT_TRUE(lci::cq_pop(local).is_retry());
  lci::deregister_rcomp(rcomp);
  lci::free_comp(&local);
  lci::free_comp(&target);
}

INSTANTIATE_TEST_SUITE_P(
    SendOrAmTimesSemantic, UserPacket,
    ::testing::Combine(::testing::Bool(), ::testing::Bool()),
    [](const ::testing::TestParamInfo<UserPacket::ParamType>& info) {
      return std::string(std::get<0>(info.param) ? "ActiveMessage" : "Send") +
             (std::get<1>(info.param) ? "_Network" : "_Memory");
    });

// The packet itself is sent: with every packet of a pool in the user's
// hands, a plain send from that pool has no packet (retry) while the user
// packets still go, and each comes back to its pool after its completion.
TEST_F(LciTest, UserPacketIsSentWithoutAnotherPacket)
{
  LCI_SKIP_IF_SENDS_COPY();
  constexpr int kPackets = 4;
  lci::packet_pool_t pool = lci::alloc_packet_pool_x().npackets(kPackets)();
  EXPECT_EQ(lci::get_max_bcopy_size_x().packet_pool(pool)(),
            lci::get_max_bcopy_size());
  const size_t size = 1000;  // eager
  for (int round = 0; round < 3; ++round) {
    std::vector<void*> ups;
    for (int i = 0; i < kPackets; ++i) {
      ups.push_back(lci::get_upacket_x().packet_pool(pool)());
      ASSERT_NE(ups.back(), nullptr)
          << "round " << round << ": packet " << i << " did not come back";
    }
    EXPECT_EQ(lci::get_upacket_x().packet_pool(pool)(), nullptr);
    std::vector<unsigned char> plain(size);
    lci::status_t s =
        lci::post_send_x(0, plain.data(), size, 1, lci::COMP_NULL_RETRY)
            .packet_pool(pool)();
    EXPECT_EQ(s.error.errorcode, lci::errorcode_t::retry_nopacket);
    for (int i = 0; i < kPackets; ++i) {
      fill_pattern(ups[i], size, 800 + i);
      s = lci_test::post_retry([&] {
        return lci::post_send_x(0, ups[i], size, 800 + i, lci::COMP_NULL_RETRY)
            .packet_pool(pool)();
      });
      ASSERT_TRUE(s.is_done()) << s.error.get_str();
    }
    lci::wait_drained();
    for (int i = 0; i < kPackets; ++i) expect_received(800 + i, size, 800 + i);
  }
  lci::free_packet_pool(&pool);
}

// Recognition rule: a user packet is recognized when posted with its pool
// (the post's packet_pool, the device's pool or the runtime's default
// pool). Posted without, it is an ordinary buffer: copied, and still the
// caller's.
TEST_F(LciTest, UserPacketOfAnotherPoolIsAnOrdinaryBuffer)
{
  lci::packet_pool_t pool = lci::alloc_packet_pool_x().npackets(2)();
  void* up = lci::get_upacket_x().packet_pool(pool)();
  ASSERT_NE(up, nullptr);
  fill_pattern(up, 100, 5);
  ASSERT_TRUE(
      lci::post_send(0, up, 100, 5, lci::COMP_NULL).is_done());  // default pool
  expect_received(5, 100, 5);
  lci::put_upacket(up);  // still the caller's
  lci::free_packet_pool(&pool);
}

TEST_F(LciTest, UserPacketOwnershipErrors)
{
  void* up = get_upacket_wait();
  ASSERT_NE(up, nullptr);
  fill_pattern(up, 100, 6);
  // too large for a packet: an error, and the packet stays the caller's
  const size_t too_big = lci::get_max_bcopy_size() + 1;
  EXPECT_THAT(lci_test::fatal_message(
                  [&] { lci::post_send(0, up, too_big, 6, lci::COMP_NULL); }),
              HasSubstr("post_comm"));
  ASSERT_TRUE(lci::post_send(0, up, 100, 6, lci::COMP_NULL).is_done());
  expect_received(6, 100, 6);
  // posted: the caller may neither post it again nor put it back
  EXPECT_THAT(lci_test::fatal_message(
                  [&] { lci::post_send(0, up, 100, 6, lci::COMP_NULL); }),
              AllOf(HasSubstr("post_comm"), HasSubstr("not the caller's")));
  EXPECT_THAT(lci_test::fatal_message([&] { lci::put_upacket(up); }),
              AllOf(HasSubstr("put_upacket"), HasSubstr("not the caller's")));
  // put back twice
  void* up2 = get_upacket_wait();
  ASSERT_NE(up2, nullptr);
  lci::put_upacket(up2);
  EXPECT_THAT(lci_test::fatal_message([&] { lci::put_upacket(up2); }),
              HasSubstr("put_upacket"));
  // not packets at all
  int local = 0;
  EXPECT_THAT(lci_test::fatal_message([&] { lci::put_upacket(nullptr); }),
              HasSubstr("put_upacket: null"));
  EXPECT_THAT(lci_test::fatal_message([&] { lci::put_upacket(&local); }),
              HasSubstr("not a packet"));
  void* up3 = get_upacket_wait();
  EXPECT_THAT(lci_test::fatal_message(
                  [&] { lci::put_upacket(static_cast<char*>(up3) + 8); }),
              HasSubstr("not a packet"));
  lci::put_upacket(up3);
  lci::wait_drained();
  lci_test::expect_sendrecv_works();
}

// On retry the packet is still the caller's: it may post it again or put it
// back. With allow_retry(false) the backlog takes the packet itself.
TEST_F(LciTest, UserPacketOnRetryAndThroughTheBacklog)
{
  LCI_SKIP_IF_SENDS_COPY();
  lci::packet_pool_t tiny = lci::alloc_packet_pool_x().npackets(1)();
  const size_t size = 400;
  std::vector<unsigned char> plain(size);
  fill_pattern(plain.data(), size, 30);
  lci::comp_t cq = lci::alloc_cq();
  // a backlogged send (its packet is held by a network send in flight)
  ASSERT_TRUE(lci_test::post_retry([&] {
                return lci::post_send_x(0, plain.data(), size, 30, cq)
                    .packet_pool(tiny)
                    .comp_semantic(kNetwork)();
              }).is_posted());
  ASSERT_EQ(lci::post_send_x(0, plain.data(), size, 30, lci::COMP_NULL_RETRY)
                .packet_pool(tiny)
                .allow_retry(false)()
                .error.errorcode,
            lci::errorcode_t::done_backlog);

  // a user packet behind the backlog: retry, and still the caller's
  void* a = get_upacket_wait();
  void* b = get_upacket_wait();
  void* c = get_upacket_wait();
  ASSERT_TRUE(a && b && c);
  fill_pattern(a, size, 31);
  fill_pattern(b, size, 32);
  fill_pattern(c, size, 33);
  lci::status_t s = lci::post_send(0, a, size, 31, lci::COMP_NULL_RETRY);
  ASSERT_EQ(s.error.errorcode, lci::errorcode_t::retry_backlog);
  lci::put_upacket(a);  // allowed: it is still the caller's
  s = lci::post_send(0, b, size, 32, lci::COMP_NULL_RETRY);
  ASSERT_TRUE(s.is_retry());
  // allow_retry(false): queued as it is (done_backlog / posted_backlog with
  // network), and the library's from now on
  int ctx = 0;
  s = lci::post_send_x(0, b, size, 32, lci::COMP_NULL_RETRY)
          .allow_retry(false)();
  ASSERT_EQ(s.error.errorcode, lci::errorcode_t::done_backlog);
  EXPECT_THAT(lci_test::fatal_message([&] { lci::put_upacket(b); }),
              HasSubstr("not the caller's"));
  s = lci::post_send_x(0, c, size, 33, cq)
          .comp_semantic(kNetwork)
          .user_context(&ctx)
          .allow_retry(false)();
  ASSERT_EQ(s.error.errorcode, lci::errorcode_t::posted_backlog);
  EXPECT_THAT(lci_test::fatal_message([&] { lci::put_upacket(c); }),
              HasSubstr("not the caller's"));
  lci::wait_drained();
  // two network completions: the first send and c's
  std::vector<lci::status_t> st;
  for (lci::status_t x = lci::cq_pop(cq); !x.is_retry(); x = lci::cq_pop(cq))
    st.push_back(x);
  ASSERT_EQ(st.size(), 2u);
  for (const lci::status_t& x : st)
    if (x.tag == 33) {
      EXPECT_EQ(x.buffer, c);
      EXPECT_EQ(x.user_context, &ctx);
    } else {
      EXPECT_EQ(x.tag, 30u);
    }
  expect_received(30, size, 30);
  expect_received(30, size, 30);
  expect_received(32, size, 32);
  expect_received(33, size, 33);
  lci::free_comp(&cq);
  lci::free_packet_pool(&tiny);
}

// Threads fill and post user packets as active messages concurrently.
TEST_F(LciTest, UserPacketsFromThreads)
{
  checking_comp_t remote(true);
  lci::rcomp_t rcomp = lci::register_rcomp(lci::comp_t(&remote));
  constexpr int kThreads = 4, kPerThread = 100;
  const std::vector<size_t> sizes = boundary_sizes();
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        lci::tag_t tag = t * 1000 + i;
        size_t size = sizes[i % sizes.size()];
        void* up = nullptr;
        while (!(up = lci::get_upacket())) lci::progress();
        fill_pattern(up, size, tag);
        lci::status_t s;
        do {
          s = lci::post_am_x(0, up, size, lci::COMP_NULL_RETRY, rcomp)
                  .tag(tag)();
          lci::progress();
        } while (s.is_retry());
        if (!s.is_done()) ++failures;
      }
    });
  for (auto& th : threads) th.join();
  const int total = kThreads * kPerThread;
  ASSERT_TRUE(
      lci_test::progress_until([&] { return remote.total() >= total; }));
  lci::wait_drained();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(remote.total(), total);
  EXPECT_EQ(remote.bad(), 0);
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kPerThread; ++i)
      EXPECT_EQ(remote.count(t * 1000 + i), 1);
  lci::deregister_rcomp(rcomp);
}

}  // namespace
