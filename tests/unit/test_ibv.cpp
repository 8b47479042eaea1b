// The ibv backend above its verbs layer, against the fake layer
// (LCI_IBV_FAKE; src/net/ibv/verbs_fake.cpp): no RDMA device exists where
// these run. Immediate-data encoding, the try-lock policy, the queue-pair
// state machine and table, completion dispatch through a device talking
// to itself (rank 0 of 1), the registration cache and the error paths.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <lci.hpp>
#include <string>
#include <vector>

#include "net/ibv/context.hpp"
#include "net/ibv/device.hpp"
#include "net/ibv/imm.hpp"
#include "net/ibv/lock_policy.hpp"
#include "net/ibv/qp_table.hpp"
#include "net/ibv/reg_cache.hpp"
#include "net/ibv/verbs.hpp"
#include "net/regions.hpp"

namespace ibv = lci::net::ibv;
using lci::net::cqe_t;

namespace
{

// LCI_IBV_FAKE for the scope
struct fake_env_t {
  explicit fake_env_t(const char* mode = "1")
  {
    const char* old = std::getenv("LCI_IBV_FAKE");
    had_ = old != nullptr;
    if (had_) old_ = old;
    setenv("LCI_IBV_FAKE", mode, 1);
  }
  ~fake_env_t()
  {
    if (had_)
      setenv("LCI_IBV_FAKE", old_.c_str(), 1);
    else
      unsetenv("LCI_IBV_FAKE");
  }
  bool had_;
  std::string old_;
};

lci::runtime_attr_t runtime_attr()
{
  return lci::detail::get_default_runtime_attr("test");
}

lci::device_attr_t device_attr()
{
  return lci::detail::get_default_device_attr("test");
}

std::string fatal_of(const std::function<void()>& f)
{
  try {
    f();
  } catch (const lci::fatal_error& e) {
    return e.what();
  }
  return "";
}

// Polls until `n` completions came (or a deadline).
std::vector<cqe_t> poll_n(lci::net::net_device_t* d, size_t n)
{
  std::vector<cqe_t> got;
  cqe_t buf[16];
  for (int i = 0; i < 100000 && got.size() < n; ++i) {
    size_t k = d->poll_comp(buf, 16, nullptr, 0);
    got.insert(got.end(), buf, buf + k);
  }
  return got;
}

// Static buffers standing for a packet pool's memory (the backend posts
// only registered memory or a pool's), for the scope.
struct pool_region_t {
  pool_region_t(const void* p, size_t n) : id(lci::net::announce_region(p, n))
  {
  }
  ~pool_region_t() { lci::net::retire_region(id); }
  uint64_t id;
};

// A device of a one-rank context, connected to itself.
struct self_t {
  explicit self_t(const lci::runtime_attr_t& ra = runtime_attr(),
                  const lci::device_attr_t& da = device_attr())
      : ctx(ra, 0, 1)
  {
    dev = ctx.alloc_device(da);
    std::vector<std::string> addrs{dev->get_address()};
    dev->connect(addrs);
  }
  ibv::ibv_device_t* ibv()
  {
    return static_cast<ibv::ibv_device_t*>(dev.get());
  }
  // the mode a test chose (check), else an active port
  fake_env_t env{std::getenv("LCI_IBV_FAKE") ? std::getenv("LCI_IBV_FAKE")
                                             : "1"};
  ibv::ibv_context_t ctx;
  std::unique_ptr<lci::net::net_device_t> dev;
};

// the fake verbs layer (under fake_env_t); null, with a test failure
// saying why, when it does not open
std::unique_ptr<ibv::verbs_t> open_fake_verbs()
{
  std::string why;
  auto v = ibv::open_verbs(ibv::open_attr_t{}, &why);
  EXPECT_TRUE(v) << why;
  return v;
}

}  // namespace

TEST(IbvImm, NetworkByteOrderRoundTrip)
{
  for (uint64_t v : {0ull, 1ull, 0x12345678ull, 0xffffffffull}) {
    const uint32_t be = ibv::encode_imm(v);
    unsigned char b[4];
    std::memcpy(b, &be, 4);
    EXPECT_EQ(b[0], (v >> 24) & 0xff);  // most significant byte first
    EXPECT_EQ(b[3], v & 0xff);
    EXPECT_EQ(ibv::decode_imm(be), v);
  }
  EXPECT_NE(fatal_of([] {
              ibv::encode_imm(1ull << 32);
            }).find("does not fit the 4 bytes"),
            std::string::npos);
}

TEST(IbvLockPolicy, GranularityFollowsTheThreadDomainStrategy)
{
  ibv::qp_locks_t per(lci::attr_ibv_td_strategy_t::per_qp, 3);
  EXPECT_NE(&per.of(0), &per.of(1));
  EXPECT_NE(&per.of(1), &per.of(2));
  EXPECT_EQ(per.thread_domains(), 3);
  // holding one queue pair's lock leaves the others free
  ASSERT_TRUE(per.of(0).try_lock());
  EXPECT_TRUE(per.of(1).try_lock());
  per.of(1).unlock();
  per.of(0).unlock();
  for (const char* s : {"all_qp", "none"}) {
    ibv::qp_locks_t one(lci::detail::parse_attr_ibv_td_strategy(s, "test"), 3);
    EXPECT_EQ(&one.of(0), &one.of(2)) << s;
    ASSERT_TRUE(one.of(0).try_lock());
    EXPECT_FALSE(one.of(2).try_lock()) << s;
    one.of(0).unlock();
  }
  EXPECT_EQ(ibv::qp_locks_t(ibv::td_strategy_t::all_qp, 3).thread_domains(), 1);
  EXPECT_EQ(ibv::qp_locks_t(ibv::td_strategy_t::none, 3).thread_domains(), 0);
  EXPECT_NE(fatal_of([] {
              lci::detail::parse_attr_ibv_td_strategy("per_cq", "test");
            }).find("\"per_cq\" is not one of none, all_qp, per_qp"),
            std::string::npos);
}

TEST(IbvQpTable, StateMachineAndLookup)
{
  fake_env_t env;
  std::string why;
  auto v = ibv::open_verbs(ibv::open_attr_t{}, &why);
  ASSERT_TRUE(v) << why;
  void* cq = v->create_cq(64);
  void* srq = v->create_srq(16);
  {
    ibv::qp_table_t t(v.get());
    for (int r = 0; r < 2; ++r)
      t.add(v->create_qp(cq, srq, nullptr, 16, 64), 7);
    EXPECT_EQ(t.rank_of(t.qp(1).qpn), 1);
    EXPECT_EQ(t.rank_of(t.qp(0).qpn), 0);
    EXPECT_EQ(t.rank_of(12345), -1);
    EXPECT_EQ(t.state(0), ibv::qp_state_t::init);
    // RTS needs RTR first; a refused step leaves the queue pair in error
    EXPECT_NE(fatal_of([&] { t.ensure_rts(0); }).find("cannot go to RTS"),
              std::string::npos);
    EXPECT_EQ(t.state(0), ibv::qp_state_t::error);
    // the pair 1 <-> 1 (a queue pair connected to itself, as for rank_me)
    ibv::qp_addr_t self;
    std::memcpy(self.gid, v->port().gid, 16);
    self.qpn = t.qp(1).qpn;
    t.to_rtr(1, self);
    EXPECT_EQ(t.state(1), ibv::qp_state_t::rtr);
    t.ensure_rts(1);
    t.ensure_rts(1);  // already there: nothing
    EXPECT_EQ(t.state(1), ibv::qp_state_t::rts);
    EXPECT_NE(fatal_of([&] { t.to_rtr(1, self); }).find("cannot go to RTR"),
              std::string::npos);
    EXPECT_EQ(t.state(1), ibv::qp_state_t::error);
  }
  v->destroy_srq(srq);
  v->destroy_cq(cq);
}

TEST(IbvDevice, CompletionDispatch)
{
  self_t s;
  auto* d = s.dev.get();
  EXPECT_EQ(s.ctx.caps().backend, "ibv");
  EXPECT_EQ(s.ctx.caps().imm_data_size, 4u);
  EXPECT_EQ(s.ibv()->qps().state(0), ibv::qp_state_t::rts);
  alignas(64) static char rbuf[4][256];
  pool_region_t rpool(rbuf, sizeof(rbuf));
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(d->post_recv(rbuf[i], 256, &rbuf[i]).is_posted());
  // a send from a buffer: a send cqe with its context, a recv cqe with the
  // receive's context and length
  alignas(64) static char sbuf[200];
  pool_region_t spool(sbuf, sizeof(sbuf));
  std::memset(sbuf, 'a', sizeof(sbuf));
  ASSERT_TRUE(d->post_send(0, sbuf, 200, sbuf).is_posted());
  auto got = poll_n(d, 2);
  ASSERT_EQ(got.size(), 2u);
  int sends = 0, recvs = 0;
  for (const cqe_t& c : got) {
    EXPECT_EQ(c.error, nullptr);
    if (c.kind == cqe_t::kind_t::send) {
      ++sends;
      EXPECT_EQ(c.ctx, sbuf);
    } else if (c.kind == cqe_t::kind_t::recv) {
      ++recvs;
      EXPECT_EQ(c.ctx, &rbuf[0]);
      EXPECT_EQ(c.length, 200u);
      EXPECT_EQ(rbuf[0][199], 'a');
    }
  }
  EXPECT_EQ(sends, 1);
  EXPECT_EQ(recvs, 1);
  // inline: done at once, no send cqe; the message arrives
  const char head[] = "HD";
  const char tail[] = "payload";
  ASSERT_TRUE(d->route(0).max_copy >= 64);
  EXPECT_TRUE(d->send_copy(0, head, 2, tail, 7).is_done());
  got = poll_n(d, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].kind, cqe_t::kind_t::recv);
  EXPECT_EQ(got[0].length, 9u);
  EXPECT_EQ(std::string(rbuf[1], 9), "HDpayload");
  // write with immediate: data in place, a remote_write with the value,
  // and the receive it consumed posted again (the next send still lands)
  static char target[4096];
  lci::net::net_mr_t mr = s.ctx.register_memory(target, sizeof(target), "t");
  lci::net::net_mr_t smr = s.ctx.register_memory(sbuf, sizeof(sbuf), "t");
  lci::net::remote_t rem{mr.rma_base, 100, mr.rkey};
  alignas(8) static int op;
  ASSERT_TRUE(d->post_writeimm(0, sbuf, 50, smr.desc, rem, 0xabcdef01u, &op)
                  .is_posted());
  got = poll_n(d, 2);
  ASSERT_EQ(got.size(), 2u);
  bool saw_imm = false, saw_write = false;
  for (const cqe_t& c : got) {
    EXPECT_EQ(c.error, nullptr);
    if (c.kind == cqe_t::kind_t::remote_write) {
      saw_imm = true;
      EXPECT_EQ(c.imm, 0xabcdef01u);
    }
    if (c.kind == cqe_t::kind_t::write) {
      saw_write = true;
      EXPECT_EQ(c.ctx, &op);
    }
  }
  EXPECT_TRUE(saw_imm);
  EXPECT_TRUE(saw_write);
  EXPECT_EQ(target[100], 'a');
  EXPECT_EQ(target[149], 'a');
  EXPECT_EQ(target[150], 0);
  for (int i = 0; i < 2; ++i)
    EXPECT_TRUE(d->send_copy(0, head, 2, tail, 7).is_done());
  got = poll_n(d, 2);
  ASSERT_EQ(got.size(), 2u);  // rbuf[2] and rbuf[3]: none was lost
  // read back
  alignas(64) static char back[50];
  pool_region_t bpool(back, sizeof(back));
  ASSERT_TRUE(d->post_read(0, back, 50, nullptr, rem, &op).is_posted());
  got = poll_n(d, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].kind, cqe_t::kind_t::read);
  EXPECT_EQ(back[49], 'a');
  // a bad key: an error cqe of the right kind and rank; the queue pair
  // is then in error and flushes what follows, as on hardware
  lci::net::remote_t bad{mr.rma_base, 0, mr.rkey ^ 0x10000};
  ASSERT_TRUE(d->post_write(0, sbuf, 8, smr.desc, bad, &op, false).is_posted());
  got = poll_n(d, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].kind, cqe_t::kind_t::write);
  EXPECT_EQ(got[0].ctx, &op);
  EXPECT_EQ(got[0].rank, 0);
  ASSERT_NE(got[0].error, nullptr);
  EXPECT_STREQ(got[0].error, "remote access error");
  ASSERT_TRUE(d->post_send(0, sbuf, 8, sbuf).is_posted());
  got = poll_n(d, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].kind, cqe_t::kind_t::send);
  EXPECT_EQ(got[0].ctx, sbuf);
  ASSERT_NE(got[0].error, nullptr);
  EXPECT_STREQ(got[0].error, "Work Request Flushed Error");
  // a second registration of the region shares the device's registration
  // but not the key the core files it under
  lci::net::net_mr_t mr2 = s.ctx.register_memory(target, 64, "t");
  EXPECT_NE(mr2.rkey, mr.rkey);
  EXPECT_EQ(mr2.rkey & 0xffffffffu, mr.rkey & 0xffffffffu);
  s.ctx.deregister_memory(&mr2);
  s.ctx.deregister_memory(&mr);
  s.ctx.deregister_memory(&smr);
  EXPECT_EQ(s.ctx.count_registered(), 0);
}

TEST(IbvDevice, TryLocksReportBusy)
{
  self_t s;
  auto* d = s.dev.get();
  alignas(64) static char buf[64];
  pool_region_t pool(buf, sizeof(buf));
  ASSERT_TRUE(s.ibv()->qp_locks().of(0).try_lock());
  EXPECT_TRUE(d->post_send(0, buf, 8, buf).errorcode ==
              lci::errorcode_t::retry_lock);
  EXPECT_TRUE(d->send_copy(0, buf, 8, nullptr, 0).errorcode ==
              lci::errorcode_t::retry_lock);
  s.ibv()->qp_locks().of(0).unlock();
  ASSERT_TRUE(s.ibv()->srq_lock().try_lock());
  EXPECT_TRUE(d->post_recv(buf, 64, buf).errorcode ==
              lci::errorcode_t::retry_lock);
  s.ibv()->srq_lock().unlock();
  ASSERT_TRUE(d->post_recv(buf, 64, buf).is_posted());
  EXPECT_TRUE(d->send_copy(0, buf, 8, nullptr, 0).is_done());
  cqe_t c[4];
  ASSERT_TRUE(s.ibv()->cq_lock().try_lock());
  EXPECT_EQ(d->poll_comp(c, 4, nullptr, 0), 0u);  // busy: nothing polled
  s.ibv()->cq_lock().unlock();
  EXPECT_EQ(poll_n(d, 1).size(), 1u);
}

TEST(IbvDevice, LazyConnectionGoesToRtsOnFirstSend)
{
  lci::runtime_attr_t ra = runtime_attr();
  ra.ibv_lazy_connect_threshold = 0;  // a job of 1 is above it
  self_t s(ra);
  EXPECT_TRUE(s.ctx.lazy());
  EXPECT_EQ(s.ibv()->qps().state(0), ibv::qp_state_t::rtr);
  alignas(64) static char buf[64];
  pool_region_t pool(buf, sizeof(buf));
  ASSERT_TRUE(s.dev->post_recv(buf, 64, buf).is_posted());
  EXPECT_TRUE(s.dev->send_copy(0, "x", 1, nullptr, 0).is_done());
  EXPECT_EQ(s.ibv()->qps().state(0), ibv::qp_state_t::rts);
  EXPECT_EQ(poll_n(s.dev.get(), 1).size(), 1u);
}

TEST(IbvDevice, ThreadDomainStrategies)
{
  for (const char* td : {"per_qp", "all_qp", "none"}) {
    lci::device_attr_t da = device_attr();
    da.ibv_td_strategy = lci::detail::parse_attr_ibv_td_strategy(td, "test");
    self_t s(runtime_attr(), da);
    alignas(64) static char buf[64];
    pool_region_t pool(buf, sizeof(buf));
    ASSERT_TRUE(s.dev->post_recv(buf, 64, buf).is_posted());
    EXPECT_TRUE(s.dev->send_copy(0, "x", 1, nullptr, 0).is_done()) << td;
    EXPECT_EQ(poll_n(s.dev.get(), 1).size(), 1u) << td;
  }
}

TEST(IbvRegCache, SharesLiveRegistrationsAndKeepsBufferOnes)
{
  fake_env_t env;
  auto v = open_fake_verbs();
  ASSERT_TRUE(v);
  alignas(4096) static char region[1 << 16];
  {
    ibv::reg_cache_t c(v.get(), true, false, nullptr);
    const auto* a = c.acquire(region, sizeof(region), "t");
    const auto* b = c.acquire(region + 100, 1000, "t");  // inside: shared
    EXPECT_EQ(a, b);
    EXPECT_EQ(c.registrations(), 1u);
    c.release(a);
    EXPECT_EQ(c.entries(), 1u);  // b still holds it
    c.release(b);
    EXPECT_EQ(c.entries(), 0u);  // idle registrations are not kept
    const auto* d = c.acquire(region, 64, "t");
    EXPECT_EQ(c.registrations(), 2u);
    c.release(d);
    // a packet pool's buffers: its whole region registered once, kept
    // while the region lives
    const uint64_t id = lci::net::announce_region(region + 8192, 16384);
    const uint32_t k1 = c.lkey(region + 8192, 100);
    const uint32_t k2 = c.lkey(region + 8192 + 12000, 100);
    EXPECT_EQ(k1, k2);
    EXPECT_EQ(c.registrations(), 3u);
    EXPECT_EQ(c.entries(), 1u);
    lci::net::retire_region(id);  // the pool goes: its registration too
    EXPECT_EQ(c.entries(), 0u);
    // a buffer in no pool and no registration: a clear error
    EXPECT_NE(fatal_of([&] {
                c.lkey(region + 8192, 100);
              }).find("neither registered nor in a packet pool"),
              std::string::npos);
    // a raw post's user buffer: served by the live user registration
    const auto* u = c.acquire(region, 4096, "t");
    EXPECT_EQ(c.lkey(region + 10, 100), u->mr.lkey);
    EXPECT_EQ(c.registrations(), 4u);
    c.release(u);
    EXPECT_EQ(c.entries(), 0u);
  }
  {
    ibv::reg_cache_t c(v.get(), false, false, nullptr);  // ibv_reg_cache 0
    const auto* a = c.acquire(region, sizeof(region), "t");
    const auto* b = c.acquire(region, sizeof(region), "t");
    EXPECT_NE(a, b);
    EXPECT_EQ(c.registrations(), 2u);
    // not shared, still found by a raw post of a buffer inside
    const uint32_t k = c.lkey(region + 10, 100);
    EXPECT_TRUE(k == a->mr.lkey || k == b->mr.lkey);
    EXPECT_EQ(c.registrations(), 2u);
    c.release(a);
    c.release(b);
    EXPECT_EQ(c.entries(), 0u);
  }
  {
    ibv::mr_t all = v->reg_mr(nullptr, SIZE_MAX, true);
    ASSERT_TRUE(all.handle);
    ibv::reg_cache_t c(v.get(), true, false, &all);  // implicit ODP
    const auto* a = c.acquire(region, 10, "t");
    EXPECT_EQ(a->mr.rkey, all.rkey);
    EXPECT_EQ(c.lkey(region, 10), all.lkey);
    EXPECT_EQ(c.registrations(), 0u);
    c.release(a);
    v->dereg_mr(all);
  }
}

namespace
{

// Two pages of fresh anonymous memory at a fixed place, which can be
// "freed and allocated again" at the same address: remap() moves the old
// pages elsewhere (where a pinning registration would keep them: the fake
// pins nothing, so a freed frame could otherwise come straight back) and
// maps new ones at the address.
struct remappable_t {
  static constexpr size_t kLen = 2 * 4096;
  remappable_t()
  {
    p = static_cast<char*>(mmap(nullptr, kLen, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    std::memset(p, 1, kLen);
  }
  ~remappable_t()
  {
    munmap(p, kLen);
    if (old) munmap(old, kLen);
  }
  bool remap()
  {
    void* away =
        mmap(nullptr, kLen, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    old = static_cast<char*>(
        mremap(p, kLen, kLen, MREMAP_MAYMOVE | MREMAP_FIXED, away));
    if (old == MAP_FAILED) return false;
    void* q = mmap(p, kLen, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (q != p) return false;
    std::memset(p, 2, kLen);
    return true;
  }
  char* p;
  char* old = nullptr;
};

// Why LCI_IBV_FAKE=check cannot work here, or "".
std::string check_skip()
{
  if (!ibv::fake_frames_visible())
    return "physical frames are hidden in /proc/self/pagemap (needs "
           "CAP_SYS_ADMIN): LCI_IBV_FAKE=check checks nothing here";
  return "";
}

// One send of `n` bytes at `buf` to itself, received into `rbuf`; the
// error of the first failed completion, or "" when both went through.
std::string self_send(self_t& s, const void* buf, size_t n, void* rbuf)
{
  auto* d = s.dev.get();
  alignas(8) static char ctx_recv, ctx_send;
  if (!d->post_recv(rbuf, 4096, &ctx_recv).is_posted()) return "post_recv";
  if (!d->post_send(0, buf, n, &ctx_send).is_posted()) return "post_send";
  std::string err;
  for (const cqe_t& c : poll_n(d, 2))
    if (c.error && err.empty()) err = c.error;
  return err;
}

}  // namespace

namespace
{

// A self device over the fake in check mode, a receive buffer, and two
// pages announced as a packet pool's memory, one send from them already
// through (their registration made).
struct pool_case_t {
  pool_case_t() : env("check"), rpool(rbuf, sizeof(rbuf))
  {
    id = lci::net::announce_region(m.p, m.kLen);
    first = self_send(s, m.p, 64, rbuf);
  }
  ~pool_case_t() { lci::net::retire_region(id); }
  fake_env_t env;
  self_t s;
  alignas(64) char rbuf[4096];
  pool_region_t rpool;
  remappable_t m;
  uint64_t id;
  std::string first;
};

}  // namespace

// ibv_prefetch_strategy: each new registration with on-demand paging
// (explicit: its own; implicit: the range of each user registration) asks
// the adapter to map its pages; pinned registrations and shared ones ask
// nothing.
TEST(IbvRegCache, PrefetchesOnDemandRegistrations)
{
  fake_env_t env;
  auto v = open_fake_verbs();
  ASSERT_TRUE(v);
  alignas(4096) static char region[1 << 16];
  using lci::attr_ibv_prefetch_strategy_t;
  {
    ibv::reg_cache_t c(v.get(), true, true, nullptr,
                       attr_ibv_prefetch_strategy_t::prefetch_write);
    const auto* a = c.acquire(region, sizeof(region), "t");
    EXPECT_EQ(c.prefetches(), 1u);
    const auto* b = c.acquire(region + 64, 64, "t");  // shared: no request
    EXPECT_EQ(c.prefetches(), 1u);
    c.release(b);
    c.release(a);
  }
  {
    ibv::reg_cache_t c(v.get(), true, true, nullptr,
                       attr_ibv_prefetch_strategy_t::none);
    c.release(c.acquire(region, sizeof(region), "t"));
    EXPECT_EQ(c.prefetches(), 0u);
  }
  {
    ibv::reg_cache_t c(v.get(), true, false, nullptr,
                       attr_ibv_prefetch_strategy_t::prefetch);  // pinned
    c.release(c.acquire(region, sizeof(region), "t"));
    EXPECT_EQ(c.prefetches(), 0u);
  }
  {
    ibv::mr_t all = v->reg_mr(nullptr, SIZE_MAX, true);
    ASSERT_NE(all.handle, nullptr);
    {
      ibv::reg_cache_t c(v.get(), true, false, &all,
                         attr_ibv_prefetch_strategy_t::prefetch_no_fault);
      c.release(c.acquire(region, 4096, "t"));
      c.release(c.acquire(region + 4096, 4096, "t"));
      EXPECT_EQ(c.prefetches(), 2u);
    }
    v->dereg_mr(all);
  }
}

// The fake in check mode notices an access through a registration whose
// pages were replaced (the hazard a pinned registration kept past its
// memory's life would be on hardware): the control for the tests below.
TEST(IbvStale, FakeCheckFailsAnAccessThroughAStaleRegistration)
{
  if (std::string why = check_skip(); !why.empty()) GTEST_SKIP() << why;
  pool_case_t c;
  EXPECT_EQ(c.first, "");
  ASSERT_TRUE(c.m.remap());
  // the region is still announced: its registration was kept, stale
  EXPECT_NE(self_send(c.s, c.m.p, 64, c.rbuf).find("stale registration"),
            std::string::npos);
}

// A packet pool freed and another allocated at its address: the pool
// retires its region before the memory goes, so the new pool's buffers get
// a registration of their own pages.
TEST(IbvStale, PoolMemoryReusedAtTheSameAddressIsRegisteredAgain)
{
  if (std::string why = check_skip(); !why.empty()) GTEST_SKIP() << why;
  pool_case_t c;
  EXPECT_EQ(c.first, "");
  const uint64_t before = c.s.ctx.cache()->registrations();
  lci::net::retire_region(c.id);
  ASSERT_TRUE(c.m.remap());
  c.id = lci::net::announce_region(c.m.p, c.m.kLen);
  EXPECT_EQ(self_send(c.s, c.m.p + 4096, 64, c.rbuf), "");
  EXPECT_EQ(c.rbuf[0], 2);  // the new pages' bytes
  EXPECT_EQ(c.s.ctx.cache()->registrations(), before + 1);
}

// The user registration cache: a buffer deregistered, its memory freed and
// a new buffer at the same address registered is a new registration (idle
// ones are not kept), and RDMA through it works.
TEST(IbvStale, UserBufferReusedAtTheSameAddressIsRegisteredAgain)
{
  if (std::string why = check_skip(); !why.empty()) GTEST_SKIP() << why;
  fake_env_t env("check");
  self_t s;
  alignas(4096) static char target[4096];
  lci::net::net_mr_t tmr = s.ctx.register_memory(target, sizeof(target), "t");
  lci::net::remote_t rem{tmr.rma_base, 0, tmr.rkey};
  remappable_t m;
  alignas(8) static char ctx;
  auto write = [&](const lci::net::net_mr_t& mr) {
    std::string err;
    s.dev->post_write(0, m.p, 64, mr.desc, rem, &ctx, false);
    for (const cqe_t& c : poll_n(s.dev.get(), 1))
      if (c.error) err = c.error;
    return err;
  };
  lci::net::net_mr_t mr = s.ctx.register_memory(m.p, m.kLen, "t");
  EXPECT_EQ(write(mr), "");
  EXPECT_EQ(target[0], 1);
  s.ctx.deregister_memory(&mr);
  ASSERT_TRUE(m.remap());
  const uint64_t before = s.ctx.cache()->registrations();
  mr = s.ctx.register_memory(m.p, m.kLen, "t");
  EXPECT_EQ(s.ctx.cache()->registrations(), before + 1);
  EXPECT_EQ(write(mr), "");
  EXPECT_EQ(target[0], 2);
  s.ctx.deregister_memory(&mr);
  // the control: a registration kept across the remap is caught
  mr = s.ctx.register_memory(m.p, m.kLen, "t");
  ASSERT_TRUE(m.remap());
  EXPECT_NE(write(mr).find("stale registration"), std::string::npos);
  s.ctx.deregister_memory(&mr);
  s.ctx.deregister_memory(&tmr);
}

// A packet pool's slab is announced while the pool lives, and retired when
// it is freed.
TEST(IbvStale, PacketPoolAnnouncesItsMemory)
{
  lci::g_runtime_init();
  lci::packet_pool_t pool = lci::alloc_packet_pool();
  void* up = lci::get_upacket_x().packet_pool(pool).call();
  ASSERT_NE(up, nullptr);
  lci::net::region_t r;
  EXPECT_TRUE(lci::net::find_region(up, 64, &r));
  lci::put_upacket(up);
  lci::free_packet_pool(&pool);
  EXPECT_FALSE(lci::net::find_region(up, 64, &r));
  lci::g_runtime_fina();
}

TEST(IbvErrors, PortDown)
{
  fake_env_t env("down");
  EXPECT_NE(fatal_of([] { ibv::ibv_context_t c(runtime_attr(), 0, 1); })
                .find("backend ibv: no RDMA device with an active port "
                      "(fake port 1 is DOWN"),
            std::string::npos);
}

TEST(IbvErrors, MemlockTooLowNamesUlimit)
{
  fake_env_t env("pin");  // the fake then pins, as a real device does
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_MEMLOCK, &old), 0);
  rlimit low = old;
  low.rlim_cur = 64 * 1024;
  if (old.rlim_max != RLIM_INFINITY && old.rlim_max < low.rlim_cur)
    low.rlim_cur = old.rlim_max;
  ASSERT_EQ(setrlimit(RLIMIT_MEMLOCK, &low), 0);
  const std::string msg =
      fatal_of([] { ibv::ibv_context_t c(runtime_attr(), 0, 1); });
  setrlimit(RLIMIT_MEMLOCK, &old);
  EXPECT_NE(msg.find("locked-memory limit (ulimit -l) is"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("ulimit -l unlimited"), std::string::npos) << msg;
}

TEST(IbvErrors, RealLayerWithoutDevice)
{
  std::string why;
  auto v = ibv::open_real_verbs(ibv::open_attr_t{}, &why);
  if (v) GTEST_SKIP() << "an RDMA device is present: " << v->port().device;
  EXPECT_NE(why.find("no RDMA device"), std::string::npos) << why;
}
