// The backend interface (src/net/net.hpp) on its own: a device of a
// one-rank runtime gets a fake backend in place of its real one, and the
// core's paths run against it. The fake loops every message back to this
// rank and answers each post as the test scripts it: done (finished in the
// call, no cqe), posted (a cqe at the next poll) or retry. Checked for each:
// the data arrives, the completion comes once, and what the core counts in
// flight (sends, transfers) drops back to zero. Messages reach the core one
// of three ways, as the test chooses: copied into the poll's scratch,
// lent in place (peek, then release), or into pre-posted receives.
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "lci_test_common.hpp"
#include "net/net.hpp"
#include "resource/device.hpp"
#include "resource/runtime.hpp"

namespace
{

using lci::error_t;
using lci::errorcode_t;
namespace net = lci::net;

// What the fake does with a post.
enum class answer_t { done, posted };

// How the fake hands incoming messages to the core.
enum class rx_t {
  scratch,  // message cqes copied into the poll's scratch buffer
  lend,     // message cqes pointing into the fake's own memory until release
  recvs     // recv cqes into pre-posted receives (needs_recvs)
};

class fake_device_t final : public net::net_device_t
{
 public:
  // script
  answer_t answer = answer_t::done;
  int retries = 0;  // the next this many posts return retry_nomem
  net::route_caps_t caps{size_t(1) << 20, true};
  rx_t rx = rx_t::scratch;
  // what happened
  int nsend_copy = 0, npost_send = 0, nwrite = 0, nwriteimm = 0, nread = 0;
  int nretried = 0;
  int nlent = 0;           // messages lent in place
  int nreleased = 0;       // releases that gave lent messages back
  int nrelease_calls = 0;  // release() calls (the core skips those of a
                           // poll that lent nothing)
  int nbusy = 0;           // polls that found messages still lent (none polled)

  bool needs_recvs() override { return rx == rx_t::recvs; }
  // messages lent and not released yet; receives posted and not used
  size_t lent() const { return lent_.size(); }
  size_t nrecvs() const { return recvs_.size(); }

  std::string get_address() override { return "fake"; }
  void connect(const std::vector<std::string>&) override {}
  net::route_caps_t route(int) override { return caps; }

  error_t send_copy(int, const void* head, size_t hlen, const void* tail,
                    size_t tlen) override
  {
    if (retry()) return errorcode_t::retry_nomem;
    ++nsend_copy;
    std::string m(static_cast<const char*>(head), hlen);
    if (tlen) m.append(static_cast<const char*>(tail), tlen);
    inbox_.push_back(std::move(m));
    return errorcode_t::done;
  }
  error_t post_send(int, const void* buf, size_t size, void* ctx) override
  {
    if (retry()) return errorcode_t::retry_nomem;
    ++npost_send;
    inbox_.emplace_back(static_cast<const char*>(buf), size);
    return finish(net::cqe_t::kind_t::send, ctx);
  }
  error_t post_send_network(int, const void* buf, size_t size,
                            void* ctx) override
  {
    if (retry()) return errorcode_t::retry_nomem;
    ++npost_send;
    inbox_.emplace_back(static_cast<const char*>(buf), size);
    local_.push_back(cqe(net::cqe_t::kind_t::send, ctx));
    return errorcode_t::posted;
  }
  error_t post_recv(void* buf, size_t size, void* ctx) override
  {
    recvs_.push_back({buf, size, ctx});
    return errorcode_t::posted;
  }
  error_t post_write(int, const void* buf, size_t size, void*,
                     const net::remote_t& r, void* ctx, bool) override
  {
    if (retry()) return errorcode_t::retry_nomem;
    ++nwrite;
    std::memcpy(address(r), buf, size);
    return finish(net::cqe_t::kind_t::write, ctx);
  }
  error_t post_writeimm(int, const void* buf, size_t size, void*,
                        const net::remote_t& r, uint64_t imm,
                        void* ctx) override
  {
    if (retry()) return errorcode_t::retry_nomem;
    ++nwriteimm;
    std::memcpy(address(r), buf, size);
    net::cqe_t c = cqe(net::cqe_t::kind_t::remote_write, nullptr);
    c.imm = imm;
    remote_.push_back(c);
    return finish(net::cqe_t::kind_t::write, ctx);
  }
  error_t post_read(int, void* buf, size_t size, void*, const net::remote_t& r,
                    void* ctx) override
  {
    if (retry()) return errorcode_t::retry_nomem;
    ++nread;
    std::memcpy(buf, address(r), size);
    return finish(net::cqe_t::kind_t::read, ctx);
  }

  // local completions first, then the target side's: immediate data, then
  // messages (in place in the scratch or in lent memory, or into posted
  // receives). While messages are lent the fake is busy, as a backend that
  // keeps its consumer lock until release: nothing polled.
  size_t poll_comp(net::cqe_t* out, size_t max, char* scratch,
                   size_t scratch_size) override
  {
    if (!lent_.empty()) {
      ++nbusy;
      return 0;
    }
    size_t n = 0;
    while (n < max && !local_.empty()) {
      out[n++] = local_.front();
      local_.pop_front();
    }
    while (n < max && !remote_.empty()) {
      out[n++] = remote_.front();
      remote_.pop_front();
    }
    size_t used = 0;
    while (n < max && !inbox_.empty()) {
      const std::string& m = inbox_.front();
      if (rx == rx_t::lend) {
        // moved first, then pointed at: the bytes stay where they are
        // until release
        lent_.push_back(std::move(inbox_.front()));
        net::cqe_t c = cqe(net::cqe_t::kind_t::message, lent_.back().data());
        c.length = lent_.back().size();
        out[n++] = c;
        ++nlent;
        lent_at_.store(out, std::memory_order_relaxed);
      } else if (rx == rx_t::recvs) {
        if (recvs_.empty()) break;
        recv_t rv = recvs_.front();
        recvs_.pop_front();
        EXPECT_LE(m.size(), rv.size);
        std::memcpy(rv.buf, m.data(), m.size());
        net::cqe_t c = cqe(net::cqe_t::kind_t::recv, rv.ctx);
        c.length = m.size();
        out[n++] = c;
      } else {
        const size_t room = (m.size() + 15) & ~size_t(15);
        if (used + room > scratch_size) break;
        std::memcpy(scratch + used, m.data(), m.size());
        net::cqe_t c = cqe(net::cqe_t::kind_t::message, scratch + used);
        c.length = m.size();
        out[n++] = c;
        used += room;
      }
      inbox_.pop_front();
    }
    return n;
  }

  // The lent messages back, overwritten first: a core that read them after
  // its release would find garbage.
  void release(const net::cqe_t* batch, size_t n) override
  {
    ++nrelease_calls;
    const net::cqe_t* at = lent_at_.load(std::memory_order_relaxed);
    if (lent_.empty() || at < batch || at >= batch + n) return;
    for (std::string& m : lent_) m.assign(m.size(), '\xdd');
    lent_.clear();
    lent_at_.store(nullptr, std::memory_order_relaxed);
    ++nreleased;
  }
  const std::atomic<const net::cqe_t*>* loan_marker() override
  {
    return &lent_at_;
  }

 private:
  struct recv_t {
    void* buf;
    size_t size;
    void* ctx;
  };

  bool retry()
  {
    if (retries <= 0) return false;
    --retries;
    ++nretried;
    return true;
  }
  static net::cqe_t cqe(net::cqe_t::kind_t kind, void* ctx)
  {
    net::cqe_t c{};
    c.kind = kind;
    c.ctx = ctx;
    return c;
  }
  error_t finish(net::cqe_t::kind_t kind, void* ctx)
  {
    if (answer == answer_t::done) return errorcode_t::done;
    local_.push_back(cqe(kind, ctx));
    return errorcode_t::posted;
  }
  static void* address(const net::remote_t& r)
  {
    return reinterpret_cast<void*>(r.base + r.disp);
  }

  std::deque<std::string> inbox_;
  std::deque<std::string> lent_;  // (a deque: elements never move)
  std::atomic<const net::cqe_t*> lent_at_{nullptr};
  std::deque<net::cqe_t> local_, remote_;
  std::deque<recv_t> recvs_;
};

// A runtime on the native shm backend (its registrations address memory by
// virtual address, which the fake's writes and reads use), with a device
// whose backend is replaced by the fake. Parameter: how the fake answers.
class NetifTest : public ::testing::TestWithParam<answer_t>
{
 protected:
  void SetUp() override
  {
    lci_test::env_guard_t shm("LCI_ATTR_BACKEND", "shm");
    lci::g_runtime_init();
    dev_ = lci::alloc_device();
    impl_ = dev_.p_impl;
    auto f = std::make_unique<fake_device_t>();
    fake_ = f.get();
    fake_->answer = GetParam();
    install(std::move(f));
  }
  void TearDown() override
  {
    lci::free_device(&dev_);
    lci::g_runtime_fina();
  }

  // the fake behind the device, its routes resolved as at allocation; the
  // real backend's pre-posted receives are gone with it: re-posted to the
  // fake by the next progress
  void install(std::unique_ptr<fake_device_t> f)
  {
    impl_->net = net::link_t(std::move(f));
    impl_->nrecvs_posted.store(0);
    reroute();
  }
  // the routes again, after the test changed fake_->caps or fake_->rx, and
  // the receives to keep posted (as alloc_device resolves them)
  void reroute()
  {
    impl_->net.connect({"fake"}, impl_->runtime->max_inject_wire);
    impl_->recv_target = impl_->net.needs_recvs()
                             ? static_cast<int64_t>(impl_->attr.net_max_recvs)
                             : 0;
  }

  bool progress_until(const std::function<bool()>& pred)
  {
    return lci_test::progress_until(pred, dev_);
  }
  // the bodies of Rendezvous and PutGetAndSignal, run once per receive mode
  void rendezvous_once();
  void put_get_once();
  void in_every_receive_mode(const std::function<void()>& body)
  {
    for (rx_t rx : {rx_t::scratch, rx_t::lend, rx_t::recvs}) {
      SCOPED_TRACE(static_cast<int>(rx));
      fake_->rx = rx;
      reroute();
      body();
    }
  }

  void expect_idle()
  {
    EXPECT_TRUE(progress_until([&] { return impl_->drained(); }));
    EXPECT_EQ(impl_->nsends_pending.load(), 0);
    EXPECT_EQ(impl_->nops_pending.load(), 0);
  }

  lci::device_t dev_;
  lci::device_impl_t* impl_ = nullptr;
  fake_device_t* fake_ = nullptr;
};

// An active message within the route's copy limit: send_copy, done at once,
// never a packet.
TEST_P(NetifTest, SmallActiveMessageIsCopied)
{
  lci::comp_t cq = lci::alloc_cq();
  lci::rcomp_t rc = lci::register_rcomp(cq);
  uint64_t v = 0x1122334455667788ull;
  lci::status_t s =
      lci::post_am_x(0, &v, sizeof(v), lci::COMP_NULL_RETRY, rc).device(dev_)();
  EXPECT_TRUE(s.is_done());
  EXPECT_EQ(fake_->nsend_copy, 1);
  EXPECT_EQ(fake_->npost_send, 0);
  EXPECT_EQ(impl_->nsends_pending.load(), 0);
  lci::status_t r = lci_test::pop_wait(cq, dev_);
  ASSERT_TRUE(r.is_done());
  ASSERT_EQ(r.size, sizeof(v));
  uint64_t got;
  std::memcpy(&got, r.buffer, sizeof(got));
  EXPECT_EQ(got, v);
  std::free(r.buffer);
  // the fake lent nothing: the core never asked for a release
  EXPECT_EQ(fake_->nrelease_calls, 0);
  lci::deregister_rcomp(rc);
  lci::free_comp(&cq);
}

// An eager send above a route's copy limit goes through a packet: posted
// (its completion returns the packet) or done (the backend copied it).
TEST_P(NetifTest, EagerSendAboveCopyLimitTakesPacket)
{
  fake_->caps = net::route_caps_t{64, false};
  reroute();
  ASSERT_LE(impl_->net.copy_limit(0), size_t(64));
  std::vector<char> out(1000), in(1000);
  lci_test::fill_pattern(out.data(), out.size(), 7);
  lci::comp_t sync = lci::alloc_sync();
  ASSERT_TRUE(lci::post_recv_x(0, in.data(), in.size(), 3, sync)
                  .device(dev_)()
                  .is_posted());
  lci::status_t s =
      lci::post_send_x(0, out.data(), out.size(), 3, lci::COMP_NULL_RETRY)
          .device(dev_)();
  EXPECT_TRUE(s.is_done());
  EXPECT_EQ(fake_->npost_send, 1);
  EXPECT_EQ(fake_->nsend_copy, 0);
  EXPECT_EQ(impl_->nsends_pending.load(),
            GetParam() == answer_t::posted ? 1 : 0);
  EXPECT_TRUE(progress_until([&] { return lci::sync_test(sync, nullptr); }));
  EXPECT_EQ(lci_test::first_pattern_mismatch(in.data(), in.size(), 7), -1);
  expect_idle();
  lci::free_comp(&sync);
}

// A refused small send returns retry and sends nothing; the next try goes.
TEST_P(NetifTest, SmallSendRetries)
{
  fake_->retries = 2;
  lci::comp_t sync = lci::alloc_sync();
  int in = 0, out = 42;
  ASSERT_TRUE(
      lci::post_recv_x(0, &in, sizeof(in), 9, sync).device(dev_)().is_posted());
  EXPECT_TRUE(lci::post_send_x(0, &out, sizeof(out), 9, lci::COMP_NULL_RETRY)
                  .device(dev_)()
                  .is_retry());
  EXPECT_TRUE(lci::post_send_x(0, &out, sizeof(out), 9, lci::COMP_NULL_RETRY)
                  .device(dev_)()
                  .is_retry());
  EXPECT_EQ(fake_->nsend_copy, 0);
  EXPECT_TRUE(lci::post_send_x(0, &out, sizeof(out), 9, lci::COMP_NULL_RETRY)
                  .device(dev_)()
                  .is_done());
  EXPECT_TRUE(progress_until([&] { return lci::sync_test(sync, nullptr); }));
  EXPECT_EQ(in, 42);
  EXPECT_EQ(fake_->nretried, 2);
  lci::free_comp(&sync);
}

// Messages into pre-posted receives (recv cqes) instead of in place.
TEST_P(NetifTest, ReceivesThroughPostedBuffers)
{
  fake_->rx = rx_t::recvs;
  reroute();
  lci::comp_t cq = lci::alloc_cq();
  std::vector<std::vector<char>> in(4, std::vector<char>(300));
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(lci::post_recv_x(0, in[i].data(), 300, i, cq)
                    .device(dev_)()
                    .is_posted());
  std::vector<char> out(300);
  for (int i = 0; i < 4; ++i) {
    lci_test::fill_pattern(out.data(), out.size(), 100 + i);
    ASSERT_TRUE(
        lci::post_send_x(0, out.data(), out.size(), i, lci::COMP_NULL_RETRY)
            .device(dev_)()
            .is_done());
  }
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(lci_test::pop_wait(cq, dev_).is_done());
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(lci_test::first_pattern_mismatch(in[i].data(), 300, 100 + i), -1)
        << i;
  expect_idle();
  lci::free_comp(&cq);
}

// A route whose backend hands messages over in place may carry eager
// messages larger than a packet (route_caps_t::max_eager): sent by
// send_copy, done at once, no rendezvous; matched on arrival, unexpected
// (kept in a heap copy), and as active messages, also to a zero_copy_am
// completion object (an allocator buffer: no packet holds it). A route
// without it sends the same size by rendezvous.
TEST_P(NetifTest, EagerAbovePacketWhereTheRouteAllows)
{
  fake_->rx = rx_t::lend;
  fake_->caps = net::route_caps_t{size_t(1) << 20, true, 16384};
  reroute();
  const size_t size = 12000;
  ASSERT_GT(size, lci::get_max_bcopy_size());
  std::vector<char> out(size), in(size);
  lci_test::fill_pattern(out.data(), size, 41);
  lci::comp_t cq = lci::alloc_cq();
  lci::comp_t zcq = lci::alloc_cq_x().zero_copy_am(true)();
  lci::rcomp_t rc = lci::register_rcomp(cq);
  lci::rcomp_t zrc = lci::register_rcomp(zcq);
  // matched on arrival
  ASSERT_TRUE(
      lci::post_recv_x(0, in.data(), size, 5, cq).device(dev_)().is_posted());
  lci::status_t s =
      lci::post_send_x(0, out.data(), size, 5, lci::COMP_NULL_RETRY)
          .device(dev_)();
  EXPECT_TRUE(s.is_done());
  EXPECT_EQ(fake_->nsend_copy, 1);
  lci::status_t r = lci_test::pop_wait(cq, dev_);
  ASSERT_TRUE(r.is_done());
  EXPECT_EQ(r.size, size);
  EXPECT_EQ(lci_test::first_pattern_mismatch(in.data(), size, 41), -1);
  // unexpected: kept after its loan went back
  std::fill(in.begin(), in.end(), 0);
  ASSERT_TRUE(lci::post_send_x(0, out.data(), size, 6, lci::COMP_NULL_RETRY)
                  .device(dev_)()
                  .is_done());
  EXPECT_TRUE(progress_until([&] { return fake_->nlent == 2; }));
  EXPECT_TRUE(progress_until([&] { return fake_->lent() == 0; }));
  r = lci::post_recv_x(0, in.data(), size, 6, cq).device(dev_)();
  if (r.is_posted()) r = lci_test::pop_wait(cq, dev_);
  ASSERT_TRUE(r.is_done());
  EXPECT_EQ(lci_test::first_pattern_mismatch(in.data(), size, 41), -1);
  // active messages
  for (lci::rcomp_t to : {rc, zrc}) {
    ASSERT_TRUE(lci::post_am_x(0, out.data(), size, lci::COMP_NULL_RETRY, to)
                    .device(dev_)()
                    .is_done());
    lci::status_t a = lci_test::pop_wait(to == rc ? cq : zcq, dev_);
    ASSERT_TRUE(a.is_done());
    ASSERT_EQ(a.size, size);
    EXPECT_EQ(lci_test::first_pattern_mismatch(static_cast<char*>(a.buffer),
                                               size, 41),
              -1);
    std::free(a.buffer);
  }
  EXPECT_EQ(fake_->nsend_copy, 4);
  EXPECT_EQ(fake_->nwrite + fake_->nwriteimm + fake_->nread, 0);
  // the same size on a route without it: rendezvous
  fake_->caps = net::route_caps_t{size_t(1) << 20, true};
  reroute();
  std::fill(in.begin(), in.end(), 0);
  ASSERT_FALSE(
      lci::post_recv_x(0, in.data(), size, 7, cq).device(dev_)().is_retry());
  lci::status_t t = lci::post_send_x(0, out.data(), size, 7, cq).device(dev_)();
  ASSERT_FALSE(t.is_retry());
  int ndone = t.is_done() ? 1 : 0;
  while (ndone < 2) ndone += lci_test::pop_wait(cq, dev_).is_done() ? 1 : 0;
  EXPECT_EQ(lci_test::first_pattern_mismatch(in.data(), size, 41), -1);
  EXPECT_GE(fake_->nwrite + fake_->nwriteimm + fake_->nread, 1);
  expect_idle();
  lci::deregister_rcomp(rc);
  lci::deregister_rcomp(zrc);
  lci::free_comp(&zcq);
  lci::free_comp(&cq);
}

// Messages lent in place (peek, then release): eager sends through a route
// that copies and one that takes packets, matched on arrival or later
// (unexpected), and an active message, with a retried send on the way. No
// receive is ever posted, and every loan is given back.
TEST_P(NetifTest, LentMessagesDeliveredInPlace)
{
  fake_->rx = rx_t::lend;
  reroute();
  EXPECT_EQ(impl_->recv_target, 0);
  lci::comp_t cq = lci::alloc_cq();
  lci::rcomp_t rc = lci::register_rcomp(cq);
  for (bool copies : {true, false}) {
    fake_->caps = copies ? net::route_caps_t{size_t(1) << 20, true}
                         : net::route_caps_t{64, false};
    reroute();
    fake_->retries = 1;
    std::vector<char> out1(1000), in1(1000), out2(300), in2(300);
    lci_test::fill_pattern(out1.data(), out1.size(), 31);
    lci_test::fill_pattern(out2.data(), out2.size(), 32);
    ASSERT_TRUE(lci::post_recv_x(0, in1.data(), in1.size(), 1, cq)
                    .device(dev_)()
                    .is_posted());
    for (auto* o : {&out1, &out2}) {
      const int tag = o == &out1 ? 1 : 2;
      ASSERT_FALSE(lci_test::post_retry(
                       [&] {
                         return lci::post_send_x(0, o->data(), o->size(), tag,
                                                 lci::COMP_NULL_RETRY)
                             .device(dev_)();
                       },
                       dev_)
                       .is_retry());
    }
    uint64_t v = 0x0102030405060708ull;
    ASSERT_TRUE(lci::post_am_x(0, &v, sizeof(v), lci::COMP_NULL_RETRY, rc)
                    .device(dev_)()
                    .is_done());
    // the expected send and the active message
    lci::status_t a = lci_test::pop_wait(cq, dev_);
    lci::status_t b = lci_test::pop_wait(cq, dev_);
    ASSERT_TRUE(a.is_done() && b.is_done());
    if (a.size == sizeof(v)) std::swap(a, b);
    EXPECT_EQ(a.tag, 1u);
    EXPECT_EQ(lci_test::first_pattern_mismatch(in1.data(), in1.size(), 31), -1);
    ASSERT_EQ(b.size, sizeof(v));
    uint64_t got;
    std::memcpy(&got, b.buffer, sizeof(got));
    EXPECT_EQ(got, v);
    std::free(b.buffer);
    // the unexpected one, copied out of the loan before its release
    EXPECT_EQ(fake_->lent(), 0u);
    lci::status_t c =
        lci::post_recv_x(0, in2.data(), in2.size(), 2, cq).device(dev_)();
    if (c.is_posted()) c = lci_test::pop_wait(cq, dev_);
    ASSERT_TRUE(c.is_done());
    EXPECT_EQ(lci_test::first_pattern_mismatch(in2.data(), in2.size(), 32), -1);
    EXPECT_EQ(fake_->nretried, copies ? 1 : 2);
  }
  expect_idle();
  EXPECT_EQ(fake_->nlent, 6);
  EXPECT_GE(fake_->nreleased, 1);
  EXPECT_EQ(fake_->lent(), 0u);
  EXPECT_EQ(fake_->nbusy, 0);
  EXPECT_EQ(fake_->nrecvs(), 0u);
  EXPECT_EQ(impl_->nrecvs_posted.load(), 0);
  lci::deregister_rcomp(rc);
  lci::free_comp(&cq);
}

// A lent message whose delivery throws (an active message for a remote
// completion not registered here): the rest of the poll is still delivered,
// each message once, and the loan is given back before the error reaches
// the caller.
TEST_P(NetifTest, LentMessagesReleasedAfterException)
{
  fake_->rx = rx_t::lend;
  reroute();
  lci::comp_t cq = lci::alloc_cq();
  uint64_t v = 7, in = 0, out = 0x55aa55aa55aa55aaull;
  ASSERT_TRUE(
      lci::post_recv_x(0, &in, sizeof(in), 4, cq).device(dev_)().is_posted());
  ASSERT_TRUE(lci::post_am_x(0, &v, sizeof(v), lci::COMP_NULL_RETRY,
                             lci::rcomp_t(12345))
                  .device(dev_)()
                  .is_done());
  ASSERT_TRUE(lci::post_send_x(0, &out, sizeof(out), 4, lci::COMP_NULL_RETRY)
                  .device(dev_)()
                  .is_done());
  EXPECT_THROW(lci::progress_x().device(dev_)(), lci::fatal_error);
  EXPECT_EQ(fake_->nlent, 2);
  EXPECT_EQ(fake_->nreleased, 1);
  EXPECT_EQ(fake_->lent(), 0u);
  lci::status_t s = lci::cq_pop(cq);
  ASSERT_TRUE(s.is_done());
  EXPECT_EQ(in, out);
  for (int i = 0; i < 100; ++i) lci::progress_x().device(dev_)();
  EXPECT_TRUE(lci::cq_pop(cq).is_retry());
  EXPECT_EQ(fake_->nlent, 2);
  lci::free_comp(&cq);
}

// A handler that waits, by progressing its own device, for more messages
// from the same peer: the next one in the same lent batch, and one it sends
// itself (new traffic, polled after the batch). The nested progress
// handles the rest of the batch and releases it before it polls, so it
// finds the fake ready (never busy) and gets the new message; the handler
// sees every message once, in the order sent.
lci::device_t g_nested_dev;
std::vector<uint64_t> g_nested_seen;
lci::rcomp_t g_nested_rcomp;
void wait_from_handler(lci::status_t s)
{
  uint64_t v;
  std::memcpy(&v, s.buffer, sizeof(v));
  std::free(s.buffer);
  g_nested_seen.push_back(v);
  if (v != 1) return;
  uint64_t next = 3;
  EXPECT_TRUE(lci::post_am_x(0, &next, sizeof(next), lci::COMP_NULL_RETRY,
                             g_nested_rcomp)
                  .device(g_nested_dev)()
                  .is_done());
  for (int i = 0; i < 1000 && g_nested_seen.size() < 3; ++i)
    lci::progress_x().device(g_nested_dev)();
  EXPECT_EQ(g_nested_seen.size(), 3u);
}

TEST_P(NetifTest, HandlerWaitingForItsPeerProceeds)
{
  fake_->rx = rx_t::lend;
  reroute();
  g_nested_dev = dev_;
  g_nested_seen.clear();
  lci::comp_t h = lci::alloc_handler(wait_from_handler);
  g_nested_rcomp = lci::register_rcomp(h);
  for (uint64_t v : {uint64_t(1), uint64_t(2)})
    ASSERT_TRUE(
        lci::post_am_x(0, &v, sizeof(v), lci::COMP_NULL_RETRY, g_nested_rcomp)
            .device(dev_)()
            .is_done());
  EXPECT_TRUE(progress_until([&] { return g_nested_seen.size() == 3; }));
  EXPECT_EQ(g_nested_seen, (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(fake_->nlent, 3);
  EXPECT_EQ(fake_->nbusy, 0);
  EXPECT_EQ(fake_->lent(), 0u);
  EXPECT_EQ(fake_->nreleased, 2);
  lci::deregister_rcomp(g_nested_rcomp);
  lci::free_comp(&h);
}

// Above the eager limit: the rendezvous protocol's RTS/RTR/FIN through
// send_small and its writes or reads through the fake, done or posted, with
// a retry on the way.
TEST_P(NetifTest, Rendezvous)
{
  in_every_receive_mode([this] { rendezvous_once(); });
}

// put, get and put with signal into a registered region (large: writes and
// reads; small with signal: one message through send_small), with each way
// of receiving messages.
TEST_P(NetifTest, PutGetAndSignal)
{
  in_every_receive_mode([this] { put_get_once(); });
}

void NetifTest::rendezvous_once()
{
  const size_t size = 64 * 1024;
  std::vector<char> out(size), in(size);
  lci_test::fill_pattern(out.data(), size, 5);
  fake_->retries = 1;
  lci::comp_t rsync = lci::alloc_sync(), ssync = lci::alloc_sync();
  ASSERT_TRUE(lci::post_recv_x(0, in.data(), size, 1, rsync)
                  .device(dev_)()
                  .is_posted());
  lci::status_t s = lci_test::post_retry(
      [&] {
        return lci::post_send_x(0, out.data(), size, 1, ssync).device(dev_)();
      },
      dev_);
  ASSERT_TRUE(s.is_posted());
  EXPECT_TRUE(progress_until([&] {
    return lci::sync_test(rsync, nullptr) && lci::sync_test(ssync, nullptr);
  }));
  EXPECT_EQ(lci_test::first_pattern_mismatch(in.data(), size, 5), -1);
  EXPECT_GT(fake_->nwrite + fake_->nwriteimm + fake_->nread, 0);
  expect_idle();
  lci::free_comp(&rsync);
  lci::free_comp(&ssync);
}

void NetifTest::put_get_once()
{
  const size_t size = 16 * 1024;
  std::vector<char> region(2 * size), buf(size);
  lci::mr_t mr = lci::register_memory(region.data(), region.size());
  lci::rmr_t rmr = lci::get_rmr(mr);
  lci::comp_t sync = lci::alloc_sync();
  lci::comp_t cq = lci::alloc_cq();
  lci::rcomp_t rc = lci::register_rcomp(cq);

  lci_test::fill_pattern(buf.data(), size, 11);
  ASSERT_TRUE(lci_test::post_retry(
                  [&] {
                    return lci::post_put_x(0, buf.data(), size, sync, 0, rmr)
                        .device(dev_)();
                  },
                  dev_)
                  .is_posted());
  EXPECT_TRUE(progress_until([&] { return lci::sync_test(sync, nullptr); }));
  EXPECT_EQ(lci_test::first_pattern_mismatch(region.data(), size, 11), -1);
  EXPECT_GE(fake_->nwrite, 1);

  std::fill(buf.begin(), buf.end(), 0);
  ASSERT_TRUE(lci_test::post_retry(
                  [&] {
                    return lci::post_get_x(0, buf.data(), size, sync, 0, rmr)
                        .device(dev_)();
                  },
                  dev_)
                  .is_posted());
  EXPECT_TRUE(progress_until([&] { return lci::sync_test(sync, nullptr); }));
  EXPECT_EQ(lci_test::first_pattern_mismatch(buf.data(), size, 11), -1);
  EXPECT_GE(fake_->nread, 1);

  for (size_t n : {size_t(64), size}) {
    lci_test::fill_pattern(buf.data(), n, 20 + n);
    ASSERT_TRUE(lci_test::post_retry(
                    [&] {
                      return lci::post_put_x(0, buf.data(), n, sync, size, rmr)
                          .remote_comp(rc)
                          .device(dev_)();
                    },
                    dev_)
                    .is_posted());
    EXPECT_TRUE(progress_until([&] { return lci::sync_test(sync, nullptr); }));
    lci::status_t sig = lci_test::pop_wait(cq, dev_);
    ASSERT_TRUE(sig.is_done()) << n;
    EXPECT_EQ(sig.size, n);
    EXPECT_EQ(sig.buffer, region.data() + size);
    EXPECT_EQ(lci_test::first_pattern_mismatch(region.data() + size, n, 20 + n),
              -1);
  }
  expect_idle();
  lci::deregister_rcomp(rc);
  lci::free_comp(&cq);
  lci::free_comp(&sync);
  lci::deregister_memory(&mr);
}

INSTANTIATE_TEST_SUITE_P(Answer, NetifTest,
                         ::testing::Values(answer_t::done, answer_t::posted),
                         [](const ::testing::TestParamInfo<answer_t>& i) {
                           return i.param == answer_t::done ? "done" : "posted";
                         });

}  // namespace
