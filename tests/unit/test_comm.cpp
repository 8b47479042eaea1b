// Point-to-point communication to self: post_send / post_recv / post_am /
// post_comm over the inject and eager protocols, the status fields, the
// done/posted/retry contract, tags and matching, remote completions.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <set>
#include <thread>

#include "lci_test_common.hpp"

namespace
{

using lci_test::fill_pattern;
using lci_test::first_pattern_mismatch;
using lci_test::LciTest;
using lci_test::pop_wait;
using ::testing::HasSubstr;

constexpr unsigned char kCanary = 0xAB;
constexpr size_t kCanaryLen = 64;

enum class size_kind_t { zero, one, eight, inject, inject_plus_1, eager };

const char* kind_name(size_kind_t k)
{
  switch (k) {
    case size_kind_t::zero:
      return "Size0";
    case size_kind_t::one:
      return "Size1";
    case size_kind_t::eight:
      return "Size8";
    case size_kind_t::inject:
      return "InjectLimit";
    case size_kind_t::inject_plus_1:
      return "InjectLimitPlus1";
    case size_kind_t::eager:
      return "EagerLimit";
  }
  return "?";
}

size_t kind_size(size_kind_t k)
{
  switch (k) {
    case size_kind_t::zero:
      return 0;
    case size_kind_t::one:
      return 1;
    case size_kind_t::eight:
      return 8;
    case size_kind_t::inject:
      return lci::get_g_runtime().get_attr_max_inject_size();
    case size_kind_t::inject_plus_1:
      return lci::get_g_runtime().get_attr_max_inject_size() + 1;
    case size_kind_t::eager:
      return lci::get_max_bcopy_size();
  }
  return 0;
}

const size_kind_t kAllKinds[] = {
    size_kind_t::zero,   size_kind_t::one,           size_kind_t::eight,
    size_kind_t::inject, size_kind_t::inject_plus_1, size_kind_t::eager};

// A receive buffer with a canary area behind the payload.
struct recv_buffer_t {
  explicit recv_buffer_t(size_t n) : size(n), bytes(n + kCanaryLen, kCanary) {}
  void* data() { return bytes.data(); }
  size_t capacity() const { return size; }
  bool canary_intact() const
  {
    for (size_t i = size; i < bytes.size(); ++i)
      if (bytes[i] != kCanary) return false;
    return true;
  }
  size_t size;
  std::vector<unsigned char> bytes;
};

// Checks every field of a completed receive's status.
void expect_recv_status(const lci::status_t& s, void* buffer, size_t size,
                        lci::tag_t tag, void* user_context)
{
  EXPECT_TRUE(s.is_done()) << s.error.get_str();
  EXPECT_EQ(s.rank, 0);
  EXPECT_EQ(s.tag, tag);
  EXPECT_EQ(s.size, size);
  EXPECT_EQ(s.buffer, buffer);
  EXPECT_EQ(s.user_context, user_context);
  EXPECT_EQ(s.get_rank(), 0);
  EXPECT_EQ(s.get_tag(), tag);
  EXPECT_EQ(s.get_size(), size);
  EXPECT_EQ(s.get_buffer(), buffer);
  EXPECT_EQ(s.get_user_context(), user_context);
}

// ---------------------------------------------------------------------------
// send/recv for every size, receive posted before and after the send

class SendRecvSize
    : public LciTest,
      public ::testing::WithParamInterface<std::tuple<size_kind_t, bool>>
{
};

TEST_P(SendRecvSize, PayloadStatusAndCompletionContract)
{
  const size_kind_t kind = std::get<0>(GetParam());
  const bool recv_first = std::get<1>(GetParam());
  const size_t size = kind_size(kind);
  const lci::tag_t tag = 1000 + static_cast<lci::tag_t>(kind);
  const uint64_t seed = 77 + size;

  std::vector<unsigned char> out(size + 1);
  fill_pattern(out.data(), size, seed);
  recv_buffer_t in(size);
  int send_ctx = 0, recv_ctx = 0;
  lci::comp_t send_cq = lci::alloc_cq();
  lci::comp_t recv_cq = lci::alloc_cq();

  auto post_recv = [&] {
    return lci::post_recv_x(0, in.data(), in.capacity(), tag, recv_cq)
        .user_context(&recv_ctx)();
  };
  auto post_send = [&] {
    // a 0-byte message needs no buffer
    void* buf = size ? out.data() : nullptr;
    lci::status_t s;
    do {
      s = lci::post_send_x(0, buf, size, tag, send_cq)
              .user_context(&send_ctx)();
      if (s.is_retry()) lci::progress();
    } while (s.is_retry());
    return s;
  };

  lci::status_t r, s;
  if (recv_first) {
    r = post_recv();
    // nothing was sent yet: the receive must wait
    ASSERT_TRUE(r.is_posted()) << r.error.get_str();
    s = post_send();
  } else {
    s = post_send();
    lci_test::progress_until_quiet();  // the message now waits unexpected
    r = post_recv();
    // the unexpected message completes the receive at once
    ASSERT_TRUE(r.is_done()) << r.error.get_str();
    expect_recv_status(r, in.data(), size, tag, &recv_ctx);
  }
  // eager and inject sends copy the buffer: done at once, with a status
  ASSERT_TRUE(s.is_done()) << s.error.get_str();
  EXPECT_EQ(s.rank, 0);
  EXPECT_EQ(s.tag, tag);
  EXPECT_EQ(s.size, size);
  EXPECT_EQ(s.user_context, &send_ctx);

  if (r.is_posted()) {
    r = pop_wait(recv_cq);
    ASSERT_TRUE(r.is_done()) << "the receive never completed";
    expect_recv_status(r, in.data(), size, tag, &recv_ctx);
  }
  EXPECT_EQ(first_pattern_mismatch(in.data(), size, seed), -1);
  EXPECT_TRUE(in.canary_intact()) << "bytes written past the message";

  // done means: the completion objects are NOT signalled (and a posted
  // receive is signalled exactly once)
  lci_test::progress_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(lci::cq_pop(send_cq).is_retry()) << "a done send was signalled";
  EXPECT_TRUE(lci::cq_pop(recv_cq).is_retry())
      << "the receive was signalled more than once (or after done)";

  lci::free_comp(&send_cq);
  lci::free_comp(&recv_cq);
}

INSTANTIATE_TEST_SUITE_P(
    AllSizes, SendRecvSize,
    ::testing::Combine(::testing::ValuesIn(kAllKinds), ::testing::Bool()),
    [](const ::testing::TestParamInfo<SendRecvSize::ParamType>& info) {
      return std::string(kind_name(std::get<0>(info.param))) +
             (std::get<1>(info.param) ? "_RecvFirst" : "_SendFirst");
    });

// ---------------------------------------------------------------------------
// active messages for every size

class ActiveMessageSize : public LciTest,
                          public ::testing::WithParamInterface<size_kind_t>
{
};

TEST_P(ActiveMessageSize, PayloadAndStatus)
{
  const size_t size = kind_size(GetParam());
  const uint64_t seed = 500 + size;
  std::vector<unsigned char> out(size + 1);
  fill_pattern(out.data(), size, seed);

  lci::comp_t target_cq = lci::alloc_cq();
  lci::rcomp_t rcomp = lci::register_rcomp(target_cq);
  lci::comp_t local_cq = lci::alloc_cq();
  int ctx = 0;

  lci::status_t s;
  do {
    s = lci::post_am_x(0, size ? out.data() : nullptr, size, local_cq, rcomp)
            .tag(31)
            .user_context(&ctx)();
    if (s.is_retry()) lci::progress();
  } while (s.is_retry());
  ASSERT_TRUE(s.is_done()) << s.error.get_str();
  EXPECT_EQ(s.size, size);
  EXPECT_EQ(s.user_context, &ctx);
  // the sender may reuse its buffer at once
  std::fill(out.begin(), out.end(), 0);

  lci::status_t t = pop_wait(target_cq);
  ASSERT_TRUE(t.is_done()) << "the active message never arrived";
  EXPECT_EQ(t.rank, 0);
  EXPECT_EQ(t.tag, 31u);
  EXPECT_EQ(t.size, size);
  EXPECT_EQ(t.user_context, nullptr);  // the target gets no user_context
  if (size > 0) {
    ASSERT_NE(t.buffer, nullptr);
    EXPECT_EQ(first_pattern_mismatch(t.buffer, size, seed), -1);
  }
  std::free(t.buffer);  // the receiver owns the buffer

  lci_test::progress_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(lci::cq_pop(target_cq).is_retry()) << "delivered twice";
  EXPECT_TRUE(lci::cq_pop(local_cq).is_retry()) << "a done send was signalled";

  lci::deregister_rcomp(rcomp);
  lci::free_comp(&target_cq);
  lci::free_comp(&local_cq);
}

INSTANTIATE_TEST_SUITE_P(AllSizes, ActiveMessageSize,
                         ::testing::ValuesIn(kAllKinds),
                         [](const ::testing::TestParamInfo<size_kind_t>& info) {
                           return std::string(kind_name(info.param));
                         });

// Progress pushes an active message straight into a queue of either type:
// more messages than a queue of 4 entries holds, each delivered once, in the
// order sent, with its payload, through the array queue's overflow and the
// lcrq's appended rings.
TEST_F(LciTest, ActiveMessagesFillEachQueueTypeInOrder)
{
  constexpr int kMessages = 20;
  for (lci::attr_cq_type_t type :
       {lci::attr_cq_type_t::array_atomic, lci::attr_cq_type_t::lcrq}) {
    SCOPED_TRACE(static_cast<int>(type));
    lci::comp_t target = lci::alloc_cq_x().cq_type(type).default_length(4)();
    lci::rcomp_t rcomp = lci::register_rcomp(target);
    for (int i = 0; i < kMessages; ++i) {
      uint64_t payload = 1000 + i;
      lci::status_t s = lci_test::post_retry([&] {
        return lci::post_am_x(0, &payload, sizeof(payload), lci::COMP_NULL,
                              rcomp)
            .tag(i)();
      });
      ASSERT_TRUE(s.is_done()) << s.error.get_str();
    }
    // every message delivered before the first pop
    lci_test::progress_until_quiet();
    for (int i = 0; i < kMessages; ++i) {
      lci::status_t t = pop_wait(target);
      ASSERT_TRUE(t.is_done()) << "message " << i << " never arrived";
      EXPECT_EQ(t.rank, 0);
      EXPECT_EQ(t.tag, static_cast<lci::tag_t>(i));
      ASSERT_EQ(t.size, sizeof(uint64_t));
      uint64_t got;
      std::memcpy(&got, t.buffer, sizeof(got));
      EXPECT_EQ(got, 1000u + i);
      std::free(t.buffer);
    }
    EXPECT_TRUE(lci::cq_pop(target).is_retry()) << "delivered twice";
    lci::deregister_rcomp(rcomp);
    lci::free_comp(&target);
  }
}

// ---------------------------------------------------------------------------
// the done / posted / retry contract

TEST_F(LciTest, AllowDoneFalseSignalsExactlyOnce)
{
  const size_t sizes[] = {8, lci::get_max_bcopy_size()};  // inject, eager
  for (size_t size : sizes) {
    SCOPED_TRACE(size);
    std::vector<unsigned char> out(size), in(size);
    fill_pattern(out.data(), size, size);
    lci::comp_t cq = lci::alloc_cq();
    int ctx = 0;
    lci::status_t s = lci_test::post_retry([&] {
      return lci::post_send_x(0, out.data(), size, 3, cq)
          .allow_done(false)
          .user_context(&ctx)();
    });
    ASSERT_TRUE(s.is_posted()) << s.error.get_str();
    lci::status_t c = pop_wait(cq);
    ASSERT_TRUE(c.is_done());
    EXPECT_EQ(c.rank, 0);
    EXPECT_EQ(c.tag, 3u);
    EXPECT_EQ(c.size, size);
    EXPECT_EQ(c.buffer, out.data());
    EXPECT_EQ(c.user_context, &ctx);
    lci_test::progress_for(std::chrono::milliseconds(50));
    EXPECT_TRUE(lci::cq_pop(cq).is_retry()) << "signalled more than once";

    // the unexpected receive with allow_done(false): posted + one signal
    lci_test::progress_until_quiet();
    int rctx = 0;
    lci::status_t r = lci::post_recv_x(0, in.data(), size, 3, cq)
                          .allow_done(false)
                          .user_context(&rctx)();
    ASSERT_TRUE(r.is_posted()) << r.error.get_str();
    lci::status_t rc = pop_wait(cq);
    expect_recv_status(rc, in.data(), size, 3, &rctx);
    EXPECT_EQ(first_pattern_mismatch(in.data(), size, size), -1);
    lci_test::progress_for(std::chrono::milliseconds(50));
    EXPECT_TRUE(lci::cq_pop(cq).is_retry()) << "signalled more than once";
    lci::free_comp(&cq);
  }
}

TEST_F(LciTest, AllowDoneFalseActiveMessageAndSync)
{
  lci::comp_t target = lci::alloc_cq();
  lci::rcomp_t rc = lci::register_rcomp(target);
  lci::comp_t sync = lci::alloc_sync();
  char msg[] = "hello";
  lci::status_t s = lci_test::post_retry([&] {
    return lci::post_am_x(0, msg, sizeof(msg), sync, rc).allow_done(false)();
  });
  ASSERT_TRUE(s.is_posted()) << s.error.get_str();
  lci::status_t out;
  lci::sync_wait(sync, &out);
  EXPECT_EQ(out.size, sizeof(msg));
  EXPECT_EQ(out.buffer, msg);
  lci::status_t t = pop_wait(target);
  ASSERT_TRUE(t.is_done());
  EXPECT_STREQ(static_cast<char*>(t.buffer), "hello");
  std::free(t.buffer);
  EXPECT_FALSE(lci::sync_test(sync, nullptr)) << "signalled twice";
  lci::deregister_rcomp(rc);
  lci::free_comp(&sync);
  lci::free_comp(&target);
}

TEST_F(LciTest, CompNullBlocksUntilComplete)
{
  const size_t size = 300;
  std::vector<unsigned char> out(size), in(size);
  fill_pattern(out.data(), size, 9);
  // a blocking send returns done (never posted or retry)
  lci::status_t s = lci::post_send(0, out.data(), size, 21, lci::COMP_NULL);
  EXPECT_TRUE(s.is_done()) << s.error.get_str();
  // a blocking receive of a message that is there returns done
  lci::status_t r = lci::post_recv(0, in.data(), size, 21, lci::COMP_NULL);
  ASSERT_TRUE(r.is_done()) << r.error.get_str();
  expect_recv_status(r, in.data(), size, 21, nullptr);
  EXPECT_EQ(first_pattern_mismatch(in.data(), size, 9), -1);

  // a blocking receive posted before the send returns only once the message
  // is there (the send comes from this thread, later)
  std::vector<unsigned char> in2(size);
  std::atomic<bool> returned{false};
  lci::status_t r2;
  int ctx = 0;
  std::thread receiver([&] {
    r2 = lci::post_recv_x(0, in2.data(), size, 22, lci::COMP_NULL)
             .user_context(&ctx)();
    returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(returned.load()) << "a blocking receive returned before the "
                                   "message was sent";
  fill_pattern(out.data(), size, 10);
  s = lci::post_send(0, out.data(), size, 22, lci::COMP_NULL);
  EXPECT_TRUE(s.is_done());
  receiver.join();
  EXPECT_TRUE(returned.load());
  expect_recv_status(r2, in2.data(), size, 22, &ctx);
  EXPECT_EQ(first_pattern_mismatch(in2.data(), size, 10), -1);

  // allow_posted(false) also blocks, and does not signal the comp
  lci::comp_t cq = lci::alloc_cq();
  s = lci::post_send_x(0, out.data(), size, 23, cq).allow_posted(false)();
  EXPECT_TRUE(s.is_done());
  r = lci::post_recv_x(0, in.data(), size, 23, cq).allow_posted(false)();
  EXPECT_TRUE(r.is_done());
  EXPECT_EQ(first_pattern_mismatch(in.data(), size, 10), -1);
  lci_test::progress_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(lci::cq_pop(cq).is_retry());
  lci::free_comp(&cq);
}

// A pool of one packet: the second eager send finds it empty and must return
// retry, without signalling anything, until progress gives the packet back.
TEST_F(LciTest, RetryWhenPacketPoolIsEmpty)
{
  LCI_SKIP_IF_SENDS_COPY();
  lci::packet_pool_t pool = lci::alloc_packet_pool_x().npackets(1)();
  const size_t size = 1000;  // eager: needs a packet
  ASSERT_GT(size, lci::get_g_runtime().get_attr_max_inject_size());
  std::vector<unsigned char> a(size), b(size), in(size);
  fill_pattern(a.data(), size, 1);
  fill_pattern(b.data(), size, 2);
  lci::comp_t cq = lci::alloc_cq();

  // (the first send may also meet retry while the connection is set up)
  lci::status_t s1 = lci_test::post_retry([&] {
    return lci::post_send_x(0, a.data(), size, 1, cq).packet_pool(pool)();
  });
  ASSERT_TRUE(s1.is_done()) << s1.error.get_str();
  lci::status_t s2 =
      lci::post_send_x(0, b.data(), size, 2, cq).packet_pool(pool)();
  ASSERT_TRUE(s2.is_retry()) << s2.error.get_str();
  EXPECT_EQ(s2.error.errorcode, lci::errorcode_t::retry_nopacket);
  EXPECT_TRUE(lci::cq_pop(cq).is_retry()) << "a retried post signalled";

  // COMP_NULL_RETRY behaves the same: done or retry, never blocks
  lci::status_t s3 =
      lci::post_send_x(0, b.data(), size, 2, lci::COMP_NULL_RETRY)
          .packet_pool(pool)();
  EXPECT_TRUE(s3.is_retry());

  // retry after progress
  int tries = 0;
  do {
    lci::progress();
    s2 = lci::post_send_x(0, b.data(), size, 2, cq).packet_pool(pool)();
    ++tries;
  } while (s2.is_retry() && tries < 10000000);
  ASSERT_TRUE(s2.is_done()) << s2.error.get_str();

  // allow_retry(false): never returns retry even though the pool is empty
  lci::status_t s4 = lci::post_send_x(0, a.data(), size, 4, cq)
                         .packet_pool(pool)
                         .allow_retry(false)();
  EXPECT_FALSE(s4.is_retry()) << s4.error.get_str();
  EXPECT_TRUE(s4.is_done() || s4.is_posted());
  int expected_signals = s4.is_posted() ? 1 : 0;

  // allow_retry(false) + allow_done(false): posted (possibly from the
  // backlog), and the completion is signalled exactly once
  lci::comp_t cq5 = lci::alloc_cq();
  int ctx5 = 0;
  lci::status_t s5 = lci::post_send_x(0, b.data(), size, 5, cq5)
                         .packet_pool(pool)
                         .allow_retry(false)
                         .allow_done(false)
                         .user_context(&ctx5)();
  EXPECT_TRUE(s5.is_posted()) << s5.error.get_str();
  // the buffer may be reused at once, even if the send was queued
  std::vector<unsigned char> b_copy = b;
  std::fill(b.begin(), b.end(), 0);
  lci::status_t c5 = pop_wait(cq5);
  ASSERT_TRUE(c5.is_done());
  EXPECT_EQ(c5.tag, 5u);
  EXPECT_EQ(c5.size, size);
  EXPECT_EQ(c5.user_context, &ctx5);
  lci_test::progress_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(lci::cq_pop(cq5).is_retry()) << "signalled more than once";
  lci::free_comp(&cq5);
  {
    lci::status_t r = lci::post_recv(0, in.data(), size, 5, lci::COMP_NULL);
    ASSERT_TRUE(r.is_done());
    EXPECT_EQ(first_pattern_mismatch(in.data(), size, 2), -1);
  }
  b = b_copy;

  for (lci::tag_t tag : {1, 2, 4}) {
    lci::status_t r = lci::post_recv(0, in.data(), size, tag, lci::COMP_NULL);
    ASSERT_TRUE(r.is_done());
    EXPECT_EQ(first_pattern_mismatch(in.data(), size, tag == 2 ? 2 : 1), -1)
        << "tag " << tag;
  }
  lci_test::progress_for(std::chrono::milliseconds(50));
  int signals = 0;
  while (!lci::cq_pop(cq).is_retry()) ++signals;
  EXPECT_EQ(signals, expected_signals);

  lci::free_comp(&cq);
  lci::free_packet_pool(&pool);
}

// Unexpected messages that arrived while the pool still had packets hold
// them all; a send queued in the backlog then waits for a packet that only
// receiving those messages would free. Progress must break the cycle (it
// moves the held messages to heap copies: docs/RELIABILITY.md, the native
// shm soak stall) and every message must still arrive intact.
TEST_F(LciTest, BacklogGetsPacketsHeldByUnexpectedMessages)
{
  LCI_SKIP_IF_SENDS_COPY();
  const size_t size = 1000;  // eager, above the inject size: takes a packet
  ASSERT_GT(size, lci::get_g_runtime().get_attr_max_inject_size());
  // 2 pre-posted receives + 4 unexpected messages = the whole pool
  lci::packet_pool_t pool = lci::alloc_packet_pool_x().npackets(6)();
  lci::packet_pool_t send_pool = lci::alloc_packet_pool_x().npackets(8)();
  lci::device_t dev =
      lci::alloc_device_x().packet_pool(pool).net_max_recvs(2)();
  std::vector<unsigned char> out(size), in(size);
  // one tag: two entries inline in the engine's bucket, two in its
  // overflow list (both places must give their packets back)
  const lci::tag_t tag = 100;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    fill_pattern(out.data(), size, seed);
    lci::status_t s = lci_test::post_retry(
        [&] {
          return lci::post_send_x(0, out.data(), size, tag,
                                  lci::COMP_NULL_RETRY)
              .device(dev)
              .packet_pool(send_pool)();
        },
        dev);
    ASSERT_TRUE(s.is_done()) << s.error.get_str();
  }
  lci_test::progress_until_quiet(dev);

  // the device's pool is dry: the send goes to the backlog
  lci::comp_t cq = lci::alloc_cq();
  fill_pattern(out.data(), size, 200);
  lci::status_t s = lci::post_send_x(0, out.data(), size, 200, cq)
                        .device(dev)
                        .allow_retry(false)
                        .allow_done(false)();
  ASSERT_EQ(s.error.errorcode, lci::errorcode_t::posted_backlog)
      << s.error.get_str();
  lci::status_t c = lci_test::pop_wait(cq, dev);
  ASSERT_TRUE(c.is_done()) << "the backlogged send never left";
  EXPECT_EQ(c.tag, 200u);

  // the queued message, then the four held ones (each seed exactly once)
  std::vector<int> seen(5, 0);
  for (int i = 0; i < 5; ++i) {
    const lci::tag_t rtag = i == 0 ? 200 : tag;
    std::fill(in.begin(), in.end(), 0);
    lci::comp_t sync = lci::alloc_sync();
    lci::status_t r =
        lci::post_recv_x(0, in.data(), size, rtag, sync).device(dev)();
    if (r.is_posted()) {
      ASSERT_TRUE(lci_test::progress_until(
          [&] { return lci::sync_test(sync, &r); }, dev))
          << "tag " << rtag;
    }
    ASSERT_TRUE(r.is_done()) << "tag " << rtag;
    EXPECT_EQ(r.size, size);
    if (i == 0) {
      EXPECT_EQ(first_pattern_mismatch(in.data(), size, 200), -1);
    } else {
      int match = 0;
      for (uint64_t seed = 1; seed <= 4; ++seed)
        if (first_pattern_mismatch(in.data(), size, seed) == -1)
          match = static_cast<int>(seed);
      ASSERT_NE(match, 0) << "message " << i << " corrupted";
      ++seen[match];
    }
    lci::free_comp(&sync);
  }
  for (int seed = 1; seed <= 4; ++seed)
    EXPECT_EQ(seen[seed], 1) << "seed " << seed;
  lci::free_comp(&cq);
  lci::free_device(&dev);
  lci::free_packet_pool(&send_pool);
  lci::free_packet_pool(&pool);
}

TEST_F(LciTest, UnexpectedMessageCompletesReceiveImmediately)
{
  const size_t size = 40;
  std::vector<unsigned char> out(size), in(size);
  fill_pattern(out.data(), size, 40);
  ASSERT_TRUE(lci_test::post_retry([&] {
                return lci::post_send(0, out.data(), size, 40,
                                      lci::COMP_NULL_RETRY);
              }).is_done());
  lci_test::progress_until_quiet();
  lci::comp_t sync = lci::alloc_sync();
  int ctx = 0;
  lci::status_t r =
      lci::post_recv_x(0, in.data(), size, 40, sync).user_context(&ctx)();
  ASSERT_TRUE(r.is_done()) << r.error.get_str();
  expect_recv_status(r, in.data(), size, 40, &ctx);
  EXPECT_EQ(first_pattern_mismatch(in.data(), size, 40), -1);
  EXPECT_FALSE(lci::sync_test(sync, nullptr))
      << "a receive that returned done signalled its completion";
  lci::free_comp(&sync);
}

TEST_F(LciTest, PostCommOutAndInAreSendAndRecv)
{
  const size_t size = 128;
  std::vector<unsigned char> out(size), in(size);
  lci::comp_t cq = lci::alloc_cq();
  int rctx = 0, sctx = 0;
  lci::status_t r =
      lci::post_comm_x(lci::direction_t::IN, 0, in.data(), size, cq)
          .tag(55)
          .user_context(&rctx)();
  ASSERT_TRUE(r.is_posted());
  fill_pattern(out.data(), size, 55);
  lci::status_t s = lci_test::post_retry([&] {
    return lci::post_comm_x(lci::direction_t::OUT, 0, out.data(), size, cq)
        .tag(55)
        .user_context(&sctx)();
  });
  ASSERT_TRUE(s.is_done()) << s.error.get_str();
  EXPECT_EQ(s.user_context, &sctx);
  r = pop_wait(cq);
  expect_recv_status(r, in.data(), size, 55, &rctx);
  EXPECT_EQ(first_pattern_mismatch(in.data(), size, 55), -1);

  // post_comm OUT with a tag matches post_recv, post_send matches post_comm IN
  fill_pattern(out.data(), size, 56);
  ASSERT_TRUE(lci::post_comm_x(lci::direction_t::OUT, 0, out.data(), size,
                               lci::COMP_NULL)
                  .tag(56)()
                  .is_done());
  r = lci::post_recv(0, in.data(), size, 56, lci::COMP_NULL);
  expect_recv_status(r, in.data(), size, 56, nullptr);
  EXPECT_EQ(first_pattern_mismatch(in.data(), size, 56), -1);
  fill_pattern(out.data(), size, 57);
  ASSERT_TRUE(
      lci::post_send(0, out.data(), size, 57, lci::COMP_NULL).is_done());
  r = lci::post_comm_x(lci::direction_t::IN, 0, in.data(), size, lci::COMP_NULL)
          .tag(57)();
  expect_recv_status(r, in.data(), size, 57, nullptr);
  EXPECT_EQ(first_pattern_mismatch(in.data(), size, 57), -1);

  // post_comm OUT with a remote completion is an active message
  lci::comp_t target = lci::alloc_cq();
  lci::rcomp_t rc = lci::register_rcomp(target);
  fill_pattern(out.data(), size, 58);
  ASSERT_TRUE(lci::post_comm_x(lci::direction_t::OUT, 0, out.data(), size,
                               lci::COMP_NULL)
                  .remote_comp(rc)
                  .tag(58)()
                  .is_done());
  lci::status_t t = pop_wait(target);
  ASSERT_TRUE(t.is_done());
  EXPECT_EQ(t.tag, 58u);
  EXPECT_EQ(t.size, size);
  EXPECT_EQ(first_pattern_mismatch(t.buffer, size, 58), -1);
  std::free(t.buffer);
  lci::deregister_rcomp(rc);
  lci::free_comp(&target);

  lci_test::progress_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(lci::cq_pop(cq).is_retry());
  lci::free_comp(&cq);
}

TEST_F(LciTest, TagsDistinguishMessages)
{
  const size_t size = 64;
  const lci::tag_t tags[] = {1, 2, 3, 0,
                             lci::get_g_runtime().get_attr_max_tag()};
  for (lci::tag_t tag : tags) {
    std::vector<unsigned char> out(size);
    fill_pattern(out.data(), size, tag);
    ASSERT_TRUE(
        lci::post_send(0, out.data(), size, tag, lci::COMP_NULL).is_done());
  }
  lci::comp_t cq = lci::alloc_cq();
  // a receive for a tag nobody sent stays pending
  std::vector<unsigned char> pending(size);
  ASSERT_TRUE(lci::post_recv(0, pending.data(), size, 99, cq).is_posted());
  // receive in reverse order: each gets its own payload
  for (int i = 4; i >= 0; --i) {
    std::vector<unsigned char> in(size);
    lci::status_t r = lci::post_recv(0, in.data(), size, tags[i], cq);
    if (r.is_posted()) r = pop_wait(cq);
    ASSERT_TRUE(r.is_done());
    EXPECT_EQ(r.tag, tags[i]);
    EXPECT_EQ(first_pattern_mismatch(in.data(), size, tags[i]), -1)
        << "tag " << tags[i] << " got another message's payload";
  }
  lci_test::progress_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(lci::cq_pop(cq).is_retry()) << "tag 99 matched something";
  // the pending receive completes with the message for its tag
  std::vector<unsigned char> out(size);
  fill_pattern(out.data(), size, 99);
  ASSERT_TRUE(
      lci::post_send(0, out.data(), size, 99, lci::COMP_NULL).is_done());
  lci::status_t r = pop_wait(cq);
  expect_recv_status(r, pending.data(), size, 99, nullptr);
  EXPECT_EQ(first_pattern_mismatch(pending.data(), size, 99), -1);
  lci::free_comp(&cq);
}

// Several messages with the same tag are each received once (in whatever
// order), and a smaller message than the buffer reports its own size.
TEST_F(LciTest, SameTagMessagesEachReceivedOnce)
{
  const int n = 20;
  for (int i = 0; i < n; ++i) {
    std::vector<unsigned char> out(i + 1, static_cast<unsigned char>(i));
    ASSERT_TRUE(
        lci::post_send(0, out.data(), out.size(), 7, lci::COMP_NULL).is_done());
  }
  std::vector<int> seen(n, 0);
  for (int i = 0; i < n; ++i) {
    std::vector<unsigned char> in(64, 0xff);
    lci::status_t r =
        lci::post_recv(0, in.data(), in.size(), 7, lci::COMP_NULL);
    ASSERT_TRUE(r.is_done());
    ASSERT_GE(r.size, 1u);
    ASSERT_LE(r.size, static_cast<size_t>(n));
    int id = static_cast<int>(r.size) - 1;
    for (size_t k = 0; k < r.size; ++k) ASSERT_EQ(in[k], id);
    EXPECT_EQ(in[r.size], 0xff);
    ++seen[id];
  }
  for (int i = 0; i < n; ++i) EXPECT_EQ(seen[i], 1) << "message " << i;
}

TEST_F(LciTest, WildcardReceivesMatchSendsOfTheSamePolicy)
{
  const size_t size = 16;
  std::vector<unsigned char> out(size), in(size);
  // ANY_TAG: the sender must use rank_only
  fill_pattern(out.data(), size, 1);
  ASSERT_TRUE(lci::post_send_x(0, out.data(), size, 1234, lci::COMP_NULL)
                  .matching_policy(lci::matching_policy_t::rank_only)()
                  .is_done());
  lci::status_t r =
      lci::post_recv(0, in.data(), size, lci::ANY_TAG, lci::COMP_NULL);
  expect_recv_status(r, in.data(), size, 1234, nullptr);
  EXPECT_EQ(first_pattern_mismatch(in.data(), size, 1), -1);
  // ANY_SOURCE: tag_only
  fill_pattern(out.data(), size, 2);
  ASSERT_TRUE(lci::post_send_x(0, out.data(), size, 77, lci::COMP_NULL)
                  .matching_policy(lci::matching_policy_t::tag_only)()
                  .is_done());
  r = lci::post_recv(lci::ANY_SOURCE, in.data(), size, 77, lci::COMP_NULL);
  expect_recv_status(r, in.data(), size, 77, nullptr);
  EXPECT_EQ(first_pattern_mismatch(in.data(), size, 2), -1);
  // both wildcards: none
  fill_pattern(out.data(), size, 3);
  ASSERT_TRUE(lci::post_send_x(0, out.data(), size, 5, lci::COMP_NULL)
                  .matching_policy(lci::matching_policy_t::none)()
                  .is_done());
  r = lci::post_recv(lci::ANY_SOURCE, in.data(), size, lci::ANY_TAG,
                     lci::COMP_NULL);
  expect_recv_status(r, in.data(), size, 5, nullptr);
  EXPECT_EQ(first_pattern_mismatch(in.data(), size, 3), -1);

  // a rank_tag send does not match an ANY_TAG receive
  lci::comp_t cq = lci::alloc_cq();
  std::vector<unsigned char> in2(size);
  ASSERT_TRUE(
      lci::post_recv(0, in2.data(), size, lci::ANY_TAG, cq).is_posted());
  fill_pattern(out.data(), size, 4);
  ASSERT_TRUE(lci::post_send(0, out.data(), size, 6, lci::COMP_NULL).is_done());
  lci_test::progress_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(lci::cq_pop(cq).is_retry());
  r = lci::post_recv(0, in.data(), size, 6, lci::COMP_NULL);
  expect_recv_status(r, in.data(), size, 6, nullptr);
  // now satisfy the wildcard receive
  ASSERT_TRUE(lci::post_send_x(0, out.data(), size, 8, lci::COMP_NULL)
                  .matching_policy(lci::matching_policy_t::rank_only)()
                  .is_done());
  r = pop_wait(cq);
  expect_recv_status(r, in2.data(), size, 8, nullptr);
  lci::free_comp(&cq);
}

TEST_F(LciTest, MatchingEnginesAreSeparate)
{
  lci::matching_engine_t me = lci::alloc_matching_engine();
  const size_t size = 24;
  std::vector<unsigned char> out(size), in(size);
  lci::comp_t cq = lci::alloc_cq();
  // a receive on the default engine does not see a send to `me`
  std::vector<unsigned char> in_default(size);
  ASSERT_TRUE(lci::post_recv(0, in_default.data(), size, 3, cq).is_posted());
  fill_pattern(out.data(), size, 3);
  ASSERT_TRUE(lci::post_send_x(0, out.data(), size, 3, lci::COMP_NULL)
                  .matching_engine(me)()
                  .is_done());
  lci_test::progress_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(lci::cq_pop(cq).is_retry());
  lci::status_t r = lci::post_recv_x(0, in.data(), size, 3, lci::COMP_NULL)
                        .matching_engine(me)();
  expect_recv_status(r, in.data(), size, 3, nullptr);
  EXPECT_EQ(first_pattern_mismatch(in.data(), size, 3), -1);
  // and the default-engine send completes the default-engine receive
  fill_pattern(out.data(), size, 4);
  ASSERT_TRUE(lci::post_send(0, out.data(), size, 3, lci::COMP_NULL).is_done());
  r = pop_wait(cq);
  expect_recv_status(r, in_default.data(), size, 3, nullptr);
  EXPECT_EQ(first_pattern_mismatch(in_default.data(), size, 4), -1);
  lci::free_comp(&cq);
  lci::free_matching_engine(&me);
}

// A custom key: tags match by their low 8 bits (a "tag class"), any rank.
lci::matching_entry_key_t tag_class_key(int, lci::tag_t tag,
                                        lci::matching_policy_t)
{
  return tag & 0xff;
}

TEST_F(LciTest, CustomMakeKeyDecidesWhatMatches)
{
  lci::matching_engine_t me =
      lci::alloc_matching_engine_x().make_key(&tag_class_key)();
  const size_t size = 40;
  std::vector<unsigned char> out(size), in(size);
  fill_pattern(out.data(), size, 9);
  // tag 0x105 arrives unexpected, then a receive for tag 0x205 (same low
  // byte) takes it; the status carries the sender's tag
  ASSERT_TRUE(lci::post_send_x(0, out.data(), size, 0x105, lci::COMP_NULL)
                  .matching_engine(me)()
                  .is_done());
  lci::status_t r = lci::post_recv_x(0, in.data(), size, 0x205, lci::COMP_NULL)
                        .matching_engine(me)();
  expect_recv_status(r, in.data(), size, 0x105, nullptr);
  EXPECT_EQ(first_pattern_mismatch(in.data(), size, 9), -1);
  // a different low byte does not match
  lci::comp_t cq = lci::alloc_cq();
  ASSERT_TRUE(lci::post_recv_x(0, in.data(), size, 0x06, cq)
                  .matching_engine(me)()
                  .is_posted());
  ASSERT_TRUE(lci::post_send_x(0, out.data(), size, 0x107, lci::COMP_NULL)
                  .matching_engine(me)()
                  .is_done());
  lci_test::progress_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(lci::cq_pop(cq).is_retry());
  ASSERT_TRUE(lci::post_send_x(0, out.data(), size, 0x306, lci::COMP_NULL)
                  .matching_engine(me)()
                  .is_done());
  r = pop_wait(cq);
  expect_recv_status(r, in.data(), size, 0x306, nullptr);
  // the 0x107 message still waits for its receive
  r = lci::post_recv_x(0, in.data(), size, 0x7, lci::COMP_NULL)
          .matching_engine(me)();
  expect_recv_status(r, in.data(), size, 0x107, nullptr);
  lci::free_comp(&cq);
  lci::free_matching_engine(&me);
}

TEST_F(LciTest, MatchingEngineInsertDirectly)
{
  lci::matching_engine_t me = lci::alloc_matching_engine();
  int a = 0, b = 0, c = 0;
  using lci::matching_entry_type_t;
  EXPECT_EQ(
      lci::matching_engine_insert(me, 42, &a, matching_entry_type_t::send),
      nullptr);
  EXPECT_EQ(
      lci::matching_engine_insert(me, 42, &b, matching_entry_type_t::send),
      nullptr);
  EXPECT_EQ(lci::matching_engine_insert(me, 7, &c, matching_entry_type_t::recv),
            nullptr);
  // FIFO per key; the other type matches
  EXPECT_EQ(
      lci::matching_engine_insert(me, 42, &c, matching_entry_type_t::recv), &a);
  EXPECT_EQ(
      lci::matching_engine_insert(me, 42, &c, matching_entry_type_t::recv), &b);
  EXPECT_EQ(lci::matching_engine_insert(me, 7, &a, matching_entry_type_t::send),
            &c);
  EXPECT_THROW(
      lci::matching_engine_insert(me, 1, nullptr, matching_entry_type_t::send),
      lci::fatal_error);
  lci::free_matching_engine(&me);
}

TEST_F(LciTest, ProgressReportsWhetherItDidWork)
{
  lci_test::progress_until_quiet();
  // nothing in flight: no work
  EXPECT_TRUE(lci::progress().is_retry());
  // a message to self gives progress something to do
  char c = 'p';
  ASSERT_TRUE(lci_test::post_retry([&] {
                return lci::post_send(0, &c, 1, 12, lci::COMP_NULL_RETRY);
              }).is_done());
  bool worked =
      lci_test::progress_until([] { return lci::progress().is_done(); });
  EXPECT_TRUE(worked) << "progress never reported the arriving message";
  lci_test::progress_until_quiet();
  EXPECT_TRUE(lci::progress().is_retry());
  char in = 0;
  lci::status_t r = lci::post_recv(0, &in, 1, 12, lci::COMP_NULL);
  ASSERT_TRUE(r.is_done());
  EXPECT_EQ(in, 'p');
}

// ---------------------------------------------------------------------------
// remote completions

std::atomic<int> g_handler_calls{0};
std::atomic<uint64_t> g_handler_bad{0};
std::mutex g_handler_mu;
std::vector<lci::tag_t> g_handler_tags;

void am_handler(lci::status_t s)
{
  // the payload of message `tag` is tag + 1 bytes of pattern `tag`
  if (s.rank != 0 || s.size != s.tag + 1 || s.user_context != nullptr ||
      first_pattern_mismatch(s.buffer, s.size, s.tag) != -1)
    g_handler_bad.fetch_add(1);
  {
    std::lock_guard<std::mutex> g(g_handler_mu);
    g_handler_tags.push_back(s.tag);
  }
  std::free(s.buffer);
  g_handler_calls.fetch_add(1);
}

TEST_F(LciTest, ActiveMessagesToHandler)
{
  g_handler_calls = 0;
  g_handler_bad = 0;
  g_handler_tags.clear();
  lci::comp_t handler = lci::alloc_handler(am_handler);
  lci::rcomp_t rc = lci::register_rcomp(handler);
  const int n = 50;
  for (int i = 0; i < n; ++i) {
    std::vector<unsigned char> out(i + 1);
    fill_pattern(out.data(), out.size(), i);
    lci::status_t s;
    do {
      s = lci::post_am_x(0, out.data(), out.size(), lci::COMP_NULL_RETRY, rc)
              .tag(i)();
      if (s.is_retry()) lci::progress();
    } while (s.is_retry());
    ASSERT_TRUE(s.is_done());
  }
  ASSERT_TRUE(lci_test::progress_until([] { return g_handler_calls >= n; }));
  lci_test::progress_for(std::chrono::milliseconds(50));
  EXPECT_EQ(g_handler_calls.load(), n);
  EXPECT_EQ(g_handler_bad.load(), 0u);
  std::vector<lci::tag_t> tags = g_handler_tags;
  std::sort(tags.begin(), tags.end());
  ASSERT_EQ(tags.size(), static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) EXPECT_EQ(tags[i], static_cast<lci::tag_t>(i));
  lci::deregister_rcomp(rc);
  lci::free_comp(&handler);
}

TEST_F(LciTest, ActiveMessagesToSynchronizer)
{
  const int n = 5;
  lci::comp_t sync = lci::alloc_sync_x().threshold(n)();
  lci::rcomp_t rc = lci::register_rcomp(sync);
  auto send = [&](int i) {
    std::vector<unsigned char> out(10 * (i + 1));
    fill_pattern(out.data(), out.size(), i);
    ASSERT_TRUE(lci::post_am_x(0, out.data(), out.size(), lci::COMP_NULL, rc)
                    .tag(i)()
                    .is_done());
  };
  for (int i = 0; i < n - 1; ++i) send(i);
  lci_test::progress_until_quiet();
  EXPECT_FALSE(lci::sync_test(sync, nullptr)) << "ready before threshold";
  send(n - 1);
  std::vector<lci::status_t> st(n);
  lci::sync_wait(sync, st.data());
  std::vector<int> seen(n, 0);
  for (const lci::status_t& s : st) {
    ASSERT_LT(s.tag, static_cast<lci::tag_t>(n));
    int i = static_cast<int>(s.tag);
    ++seen[i];
    EXPECT_EQ(s.size, 10u * (i + 1));
    EXPECT_EQ(first_pattern_mismatch(s.buffer, s.size, i), -1);
    std::free(s.buffer);
  }
  for (int i = 0; i < n; ++i) EXPECT_EQ(seen[i], 1);
  EXPECT_FALSE(lci::sync_test(sync, nullptr)) << "not re-armed";
  lci::deregister_rcomp(rc);
  lci::free_comp(&sync);
}

// An allocator that hands out malloc'ed buffers and remembers them, so the
// test can tell its buffers from the default allocator's; `fail` makes
// allocate return nullptr.
class tracking_allocator_t : public lci::allocator_base_t
{
 public:
  void* allocate(size_t size) override
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++allocs;
    if (fail) return nullptr;
    void* p = std::malloc(size);
    live_.insert(p);
    return p;
  }
  void deallocate(void* ptr) override
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++deallocs;
    EXPECT_EQ(live_.erase(ptr), 1u) << "not one of this allocator's buffers";
    std::free(ptr);
  }
  bool owns(void* p)
  {
    std::lock_guard<std::mutex> lock(mu_);
    return live_.count(p) == 1;
  }
  size_t live()
  {
    std::lock_guard<std::mutex> lock(mu_);
    return live_.size();
  }
  int allocs = 0;
  int deallocs = 0;
  bool fail = false;

 private:
  std::mutex mu_;
  std::set<void*> live_;
};

// set_allocator / get_allocator: the buffers of arriving active messages,
// eager and rendezvous, come from the allocator in force; nullptr restores
// the default (malloc), which get_allocator then returns.
TEST_F(LciTest, ActiveMessageBuffersComeFromTheAllocator)
{
  lci::allocator_base_t* dflt = lci::get_allocator();
  ASSERT_NE(dflt, nullptr);
  void* probe = dflt->allocate(16);
  ASSERT_NE(probe, nullptr);
  dflt->deallocate(probe);

  tracking_allocator_t mine;
  lci::set_allocator(&mine);
  EXPECT_EQ(lci::get_allocator(), &mine);
  lci::comp_t cq = lci::alloc_cq();
  lci::rcomp_t rc = lci::register_rcomp(cq);
  const std::vector<size_t> sizes = {8, lci::get_max_bcopy_size(),
                                     lci::get_max_bcopy_size() + 1,
                                     size_t(1) << 20, 0};
  auto send = [&](size_t size, lci::tag_t tag) {
    std::vector<unsigned char> out(size);
    fill_pattern(out.data(), out.size(), static_cast<int>(tag));
    lci::status_t s = lci_test::post_retry([&] {
      return lci::post_am_x(0, out.data(), size, lci::COMP_NULL, rc).tag(tag)();
    });
    ASSERT_TRUE(s.is_done());
  };
  for (size_t i = 0; i < sizes.size(); ++i) {
    send(sizes[i], i);
    lci::status_t st = pop_wait(cq);
    ASSERT_TRUE(st.is_done());
    ASSERT_EQ(st.tag, i);
    ASSERT_EQ(st.size, sizes[i]);
    if (sizes[i] == 0) {
      EXPECT_EQ(st.buffer, nullptr);  // nothing to allocate
      continue;
    }
    EXPECT_TRUE(mine.owns(st.buffer)) << "size " << sizes[i];
    EXPECT_EQ(first_pattern_mismatch(st.buffer, st.size, static_cast<int>(i)),
              -1);
    lci::get_allocator()->deallocate(st.buffer);
  }
  EXPECT_EQ(mine.allocs, 4);
  EXPECT_EQ(mine.deallocs, 4);
  EXPECT_EQ(mine.live(), 0u);

  // an allocator out of memory: progress reports it, the message is dropped
  mine.fail = true;
  send(8, 77);
  std::string msg = lci_test::progress_until_fatal();
  EXPECT_THAT(msg, HasSubstr("cannot allocate 8 bytes"));
  EXPECT_TRUE(lci::cq_pop(cq).is_retry());
  mine.fail = false;

  // back to the default: get_allocator is no longer ours, buffers are malloc's
  lci::set_allocator(nullptr);
  EXPECT_EQ(lci::get_allocator(), dflt);
  send(8, 5);
  lci::status_t st = pop_wait(cq);
  ASSERT_TRUE(st.is_done());
  EXPECT_FALSE(mine.owns(st.buffer));
  EXPECT_EQ(mine.allocs, 5);
  std::free(st.buffer);
  // handing the default back is the same as nullptr
  lci::set_allocator(dflt);
  EXPECT_EQ(lci::get_allocator(), dflt);
  lci::deregister_rcomp(rc);
  lci::free_comp(&cq);
}

// allocator_recycling_t: a buffer given back is handed out again for a
// request of its size class (four classes per power of two), large ones
// included; other classes get other buffers.
TEST_F(LciTest, RecyclingAllocatorReusesBuffersOfTheirClass)
{
  lci::allocator_recycling_t a;
  EXPECT_EQ(a.cached_bytes(), 0u);
  for (size_t size : {size_t(8), size_t(1000), size_t(64) << 10,
                      size_t(1) << 20, size_t(16) << 20}) {
    const size_t before = a.cached_bytes();  // smaller classes' buffers
    char* p = static_cast<char*>(a.allocate(size));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 16, 0u);
    std::memset(p, 0x5a, size);
    a.deallocate(p);
    EXPECT_GE(a.cached_bytes() - before, size);
    EXPECT_LE(a.cached_bytes() - before, std::max<size_t>(64, size + size / 4));
    void* q = a.allocate(size);
    EXPECT_EQ(q, p) << "size " << size;
    EXPECT_EQ(a.cached_bytes(), before);
    a.deallocate(q);
  }
  // 65..80 bytes share a class, 81 starts the next; 1 MiB + 1 is not in
  // the class of 1 MiB
  void* p = a.allocate(65);
  a.deallocate(p);
  void* q = a.allocate(80);
  EXPECT_EQ(q, p);
  void* r = a.allocate(81);
  EXPECT_NE(r, p);
  a.deallocate(q);
  a.deallocate(r);
  void* m = a.allocate(size_t(1) << 20);
  a.deallocate(m);
  void* m1 = a.allocate((size_t(1) << 20) + 1);
  EXPECT_NE(m1, m);
  std::memset(m1, 1, (size_t(1) << 20) + 1);
  a.deallocate(m1);
  // giving a buffer back twice is caught, not cached twice
  void* d = a.allocate(4096);
  a.deallocate(d);
  EXPECT_THROW(a.deallocate(d), lci::fatal_error);
  void* d1 = a.allocate(4096);
  void* d2 = a.allocate(4096);
  EXPECT_EQ(d1, d);
  EXPECT_NE(d2, d);
  a.deallocate(d1);
  a.deallocate(d2);
}

// The cache holds at most max_cached_bytes: buffers given back beyond it
// are freed.
TEST_F(LciTest, RecyclingAllocatorIsBounded)
{
  const size_t mib = size_t(1) << 20;
  lci::allocator_recycling_t a(3 * mib);
  EXPECT_EQ(a.max_cached_bytes(), 3 * mib);
  std::vector<void*> bufs;
  for (int i = 0; i < 5; ++i) bufs.push_back(a.allocate(mib));
  for (void* b : bufs) a.deallocate(b);
  EXPECT_EQ(a.cached_bytes(), 3 * mib);
  // the three cached ones come back first, then fresh ones
  std::set<void*> cached(bufs.begin(), bufs.begin() + 3);
  std::vector<void*> again;
  for (int i = 0; i < 3; ++i) {
    again.push_back(a.allocate(mib));
    EXPECT_EQ(cached.count(again.back()), 1u);
  }
  EXPECT_EQ(a.cached_bytes(), 0u);
  again.push_back(a.allocate(mib));
  EXPECT_EQ(a.cached_bytes(), 0u);
  for (void* b : again) a.deallocate(b);
  EXPECT_EQ(a.cached_bytes(), 3 * mib);
  // a buffer larger than the bound is never cached
  void* big = a.allocate(4 * mib);
  a.deallocate(big);
  EXPECT_EQ(a.cached_bytes(), 3 * mib);
}

// Installed with set_allocator, the recycling allocator gives a large
// (rendezvous) active message the buffer of the one before it.
TEST_F(LciTest, RecyclingAllocatorRecyclesActiveMessageBuffers)
{
  lci::allocator_recycling_t mine;
  lci::set_allocator(&mine);
  lci::comp_t cq = lci::alloc_cq();
  lci::rcomp_t rc = lci::register_rcomp(cq);
  const size_t size = size_t(1) << 20;
  std::vector<unsigned char> out(size);
  void* first = nullptr;
  for (int i = 0; i < 3; ++i) {
    fill_pattern(out.data(), out.size(), i);
    lci::status_t s = lci_test::post_retry([&] {
      return lci::post_am_x(0, out.data(), size, lci::COMP_NULL, rc)();
    });
    ASSERT_FALSE(s.is_retry());
    lci::status_t st = pop_wait(cq);
    ASSERT_TRUE(st.is_done());
    ASSERT_EQ(st.size, size);
    EXPECT_EQ(first_pattern_mismatch(st.buffer, st.size, i), -1);
    if (i == 0)
      first = st.buffer;
    else
      EXPECT_EQ(st.buffer, first) << "message " << i;
    lci::get_allocator()->deallocate(st.buffer);
  }
  EXPECT_GE(mine.cached_bytes(), size);
  lci::set_allocator(nullptr);
  lci::deregister_rcomp(rc);
  lci::free_comp(&cq);
}

TEST_F(LciTest, RemoteCompHandlesAreDistinct)
{
  lci::comp_t a = lci::alloc_cq(), b = lci::alloc_cq();
  lci::rcomp_t ra = lci::register_rcomp(a);
  lci::rcomp_t rb = lci::register_rcomp(b);
  EXPECT_NE(ra, rb);
  EXPECT_NE(ra, lci::RCOMP_NULL);
  char x = 'a', y = 'b';
  ASSERT_TRUE(lci::post_am(0, &y, 1, lci::COMP_NULL, rb).is_done());
  ASSERT_TRUE(lci::post_am(0, &x, 1, lci::COMP_NULL, ra).is_done());
  lci::status_t sa = pop_wait(a), sb = pop_wait(b);
  ASSERT_TRUE(sa.is_done());
  ASSERT_TRUE(sb.is_done());
  EXPECT_EQ(*static_cast<char*>(sa.buffer), 'a');
  EXPECT_EQ(*static_cast<char*>(sb.buffer), 'b');
  std::free(sa.buffer);
  std::free(sb.buffer);
  lci::deregister_rcomp(ra);
  // b still works after a was deregistered
  ASSERT_TRUE(lci::post_am(0, &y, 1, lci::COMP_NULL, rb).is_done());
  sb = pop_wait(b);
  ASSERT_TRUE(sb.is_done());
  std::free(sb.buffer);
  lci::deregister_rcomp(rb);
  lci::free_comp(&a);
  lci::free_comp(&b);
}

// ---------------------------------------------------------------------------
// a user-defined completion object

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

TEST_F(LciTest, UserDefinedCompletionObject)
{
  recording_comp_t rec;
  lci::comp_t comp(&rec);
  EXPECT_EQ(comp.get_impl(), &rec);
  const size_t size = 200;
  std::vector<unsigned char> out(size), in(size);
  fill_pattern(out.data(), size, 8);
  int rctx = 0, sctx = 0;

  // a posted receive signals the user object
  ASSERT_TRUE(lci::post_recv_x(0, in.data(), size, 8, comp)
                  .user_context(&rctx)()
                  .is_posted());
  // a send with allow_done(false) signals it too
  ASSERT_TRUE(lci_test::post_retry([&] {
                return lci::post_send_x(0, out.data(), size, 8, comp)
                    .allow_done(false)
                    .user_context(&sctx)();
              }).is_posted());
  ASSERT_TRUE(lci_test::progress_until([&] { return rec.count() >= 2; }));
  lci_test::progress_for(std::chrono::milliseconds(50));
  std::vector<lci::status_t> st = rec.take();
  ASSERT_EQ(st.size(), 2u);
  int recvs = 0, sends = 0;
  for (const lci::status_t& s : st) {
    EXPECT_TRUE(s.is_done());
    if (s.user_context == &rctx) {
      ++recvs;
      expect_recv_status(s, in.data(), size, 8, &rctx);
    } else if (s.user_context == &sctx) {
      ++sends;
      EXPECT_EQ(s.buffer, out.data());
      EXPECT_EQ(s.size, size);
    }
  }
  EXPECT_EQ(recvs, 1);
  EXPECT_EQ(sends, 1);
  EXPECT_EQ(first_pattern_mismatch(in.data(), size, 8), -1);

  // as a remote completion, and through comp_signal
  lci::rcomp_t rc = lci::register_rcomp(comp);
  ASSERT_TRUE(lci::post_am(0, out.data(), 10, lci::COMP_NULL, rc).is_done());
  ASSERT_TRUE(lci_test::progress_until([&] { return rec.count() >= 1; }));
  st = rec.take();
  ASSERT_EQ(st.size(), 1u);
  EXPECT_EQ(st[0].size, 10u);
  EXPECT_EQ(first_pattern_mismatch(st[0].buffer, 10, 8), -1);
  std::free(st[0].buffer);
  lci::deregister_rcomp(rc);

  lci::status_t mine;
  mine.tag = 1234;
  lci::comp_signal(comp, mine);
  st = rec.take();
  ASSERT_EQ(st.size(), 1u);
  EXPECT_EQ(st[0].tag, 1234u);
}

}  // namespace

// ---------------------------------------------------------------------------
// post_comm's two entries (src/core/post.cpp): the lean one, which the
// sugar takes when no optional argument but device, tag, remote_comp and
// user_context is set (with direct paths for an eager send or active
// message and a receive from a rank with a tag), and the generic one, which
// .runtime() selects. The same posts through both must give the same
// statuses and deliver the same bytes, each exactly once.

namespace
{
// Either entry: `generic` adds .runtime(the global runtime), which the
// lean entry does not take.
template <typename Op>
lci::status_t via(Op&& op, bool generic)
{
  if (generic) return op.runtime(lci::get_g_runtime())();
  return op();
}
}  // namespace

TEST_F(LciTest, LeanAndGenericEntriesAgree)
{
  const size_t sizes[] = {0, 8, lci::get_max_bcopy_size()};
  lci::comp_t cq = lci::alloc_cq();
  lci::comp_t target = lci::alloc_cq();
  lci::rcomp_t rcomp = lci::register_rcomp(target);
  lci::device_t dev = lci::get_default_device();
  int sctx = 0, rctx = 0;
  lci::tag_t tag = 100;
  for (size_t size : sizes) {
    std::vector<unsigned char> out(size + 1), in(size + 1);
    for (int send_gen = 0; send_gen < 2; ++send_gen) {
      for (int recv_gen = 0; recv_gen < 2; ++recv_gen) {
        for (int recv_first = 0; recv_first < 2; ++recv_first) {
          ++tag;
          SCOPED_TRACE(::testing::Message()
                       << "size " << size << " send "
                       << (send_gen ? "generic" : "lean") << " recv "
                       << (recv_gen ? "generic" : "lean")
                       << (recv_first ? " recv first" : " send first"));
          const int seed = static_cast<int>(tag);
          fill_pattern(out.data(), size, seed);
          std::fill(in.begin(), in.end(), 0);
          auto recv = [&] {
            return via(lci::post_recv_x(0, in.data(), size, tag, cq)
                           .device(dev)
                           .user_context(&rctx),
                       recv_gen);
          };
          lci::status_t r;
          if (recv_first) {
            r = recv();
            ASSERT_TRUE(r.is_posted()) << r.error.get_str();
          }
          lci::status_t s = lci_test::post_retry([&] {
            return via(lci::post_send_x(0, out.data(), size, tag, cq)
                           .device(dev)
                           .user_context(&sctx),
                       send_gen);
          });
          ASSERT_TRUE(s.is_done()) << s.error.get_str();
          EXPECT_EQ(s.rank, 0);
          EXPECT_EQ(s.tag, tag);
          EXPECT_EQ(s.size, size);
          EXPECT_EQ(s.buffer, out.data());
          EXPECT_EQ(s.user_context, &sctx);
          if (!recv_first) {
            // the message is unexpected (or still in flight): done at once
            // or posted, never lost
            for (int i = 0; i < 100; ++i) lci::progress();
            r = recv();
          }
          if (r.is_posted() || recv_first) r = pop_wait(cq);
          expect_recv_status(r, in.data(), size, tag, &rctx);
          EXPECT_EQ(first_pattern_mismatch(in.data(), size, seed), -1);
          EXPECT_EQ(in[size], 0) << "a byte past the message was written";
          EXPECT_TRUE(lci::cq_pop(cq).is_retry()) << "a second completion";
        }
      }
      // an active message through either entry
      ++tag;
      fill_pattern(out.data(), size, static_cast<int>(tag));
      lci::status_t s = lci_test::post_retry([&] {
        return via(lci::post_am_x(0, out.data(), size, cq, rcomp)
                       .device(dev)
                       .tag(tag)
                       .user_context(&sctx),
                   send_gen);
      });
      ASSERT_TRUE(s.is_done()) << s.error.get_str();
      EXPECT_EQ(s.user_context, &sctx);
      lci::status_t t = pop_wait(target);
      EXPECT_TRUE(t.is_done());
      EXPECT_EQ(t.rank, 0);
      EXPECT_EQ(t.tag, tag);
      EXPECT_EQ(t.size, size);
      EXPECT_EQ(t.user_context, nullptr);
      if (size > 0) {
        ASSERT_NE(t.buffer, nullptr);
        EXPECT_EQ(first_pattern_mismatch(t.buffer, size, static_cast<int>(tag)),
                  -1);
      }
      std::free(t.buffer);
      EXPECT_TRUE(lci::cq_pop(target).is_retry()) << "a second delivery";
    }
  }
  lci::deregister_rcomp(rcomp);
  lci::free_comp(&target);
  lci::free_comp(&cq);
}
