// Every row of the paper's Table 1 to self, on shm and on tcp (loopback):
// send/recv, active message, put, put with signal, get, get with signal, at
// every protocol-boundary size from 0 bytes to 64 MiB (inject, eager,
// rendezvous), from 1 and from 8 threads sharing the default device. Every
// byte of every payload is checked (a pattern derived from rank, tag and
// index) and every completion must fire exactly once. Then the rendezvous
// variants, transfers split at max_msg_size, unexpected rendezvous messages,
// a tiny packet pool, a tiny send queue, the backlog, user registrations.
#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <thread>

#include "lci_test_common.hpp"

namespace
{

using lci_test::fill_pattern;
using lci_test::first_pattern_mismatch;
using lci_test::progress_until;
using lci_test::progress_until_quiet;

constexpr unsigned char kCanary = 0xEE;
constexpr size_t kCanaryLen = 8;

enum class op_t { sendrecv, am, put, put_signal, get, get_signal };
enum class size_case_t {
  zero,
  one,
  eight,
  inject,
  inject1,
  eager,
  eager1,
  k64,
  m1,
  m64
};

const char* op_name(op_t o)
{
  switch (o) {
    case op_t::sendrecv:
      return "SendRecv";
    case op_t::am:
      return "Am";
    case op_t::put:
      return "Put";
    case op_t::put_signal:
      return "PutSignal";
    case op_t::get:
      return "Get";
    case op_t::get_signal:
      return "GetSignal";
  }
  return "?";
}

const char* size_name(size_case_t s)
{
  static const char* const names[] = {
      "Size0",      "Size1",       "Size8",     "InjectLimit", "InjectLimit1",
      "EagerLimit", "EagerLimit1", "Size64KiB", "Size1MiB",    "Size64MiB"};
  return names[static_cast<int>(s)];
}

size_t resolve_size(size_case_t s)
{
  const size_t inject = lci::get_g_runtime().get_attr_max_inject_size();
  const size_t eager = lci::get_max_bcopy_size();
  switch (s) {
    case size_case_t::zero:
      return 0;
    case size_case_t::one:
      return 1;
    case size_case_t::eight:
      return 8;
    case size_case_t::inject:
      return inject;
    case size_case_t::inject1:
      return inject + 1;
    case size_case_t::eager:
      return eager;
    case size_case_t::eager1:
      return eager + 1;
    case size_case_t::k64:
      return 64 << 10;
    case size_case_t::m1:
      return 1 << 20;
    case size_case_t::m64:
      return 64 << 20;
  }
  return 0;
}

struct param_t {
  op_t op;
  size_case_t size;
  int threads;
  const char* provider;
  const char* rdv_protocol;  // "auto_select" unless a variant is under test
  size_t max_msg_size;       // 0: the backend's
};

// for gtest's messages
void PrintTo(const param_t& p, std::ostream* os)
{
  *os << op_name(p.op) << " " << size_name(p.size) << " " << p.threads
      << " threads " << p.provider << " rdv " << p.rdv_protocol
      << " max_msg_size " << p.max_msg_size;
}

std::string param_name(const ::testing::TestParamInfo<param_t>& info)
{
  const param_t& p = info.param;
  std::string n = std::string(op_name(p.op)) + "_" + size_name(p.size) + "_" +
                  std::to_string(p.threads) + "Threads_" + p.provider;
  if (std::string(p.rdv_protocol) != "auto_select")
    n += std::string("_") + p.rdv_protocol;
  if (p.max_msg_size) n += "_Max" + std::to_string(p.max_msg_size);
  return n;
}

uint64_t seed_of(int rank, lci::tag_t tag) { return rank * 1000003ull + tag; }

// Counts signals per tag (tags 0 .. n-1); checks what the caller asks for.
class counting_comp_t : public lci::comp_impl_t
{
 public:
  using check_t = std::function<void(const lci::status_t&)>;
  counting_comp_t(size_t n, check_t check)
      : counts_(new std::atomic<int>[n]), n_(n), check_(std::move(check))
  {
    for (size_t i = 0; i < n; ++i) counts_[i] = 0;
  }
  void signal(lci::status_t s) override
  {
    if (s.tag >= n_) {
      bad_.fetch_add(1);
      return;
    }
    if (check_) check_(s);
    counts_[s.tag].fetch_add(1);
    total_.fetch_add(1);
  }
  int count(size_t i) const { return counts_[i].load(); }
  long total() const { return total_.load(); }
  int bad() const { return bad_.load(); }

 private:
  std::unique_ptr<std::atomic<int>[]> counts_;
  size_t n_;
  check_t check_;
  std::atomic<long> total_{0};
  std::atomic<int> bad_{0};
};

// One communication of the test: its buffers and what happened to it.
struct slot_t {
  std::vector<unsigned char> out;  // send / put source / get destination
  std::vector<unsigned char> in;   // receive buffer (+ canary)
  bool done_now_local = false;     // the post returned done
  bool done_now_recv = false;
};

class P2pMatrix : public ::testing::TestWithParam<param_t>
{
 protected:
  void SetUp() override
  {
    const param_t& p = GetParam();
    ::setenv("FI_TCP_IFACE", "lo", 1);
    lci::g_runtime_init_x()
        .ofi_provider_name(p.provider)
        .rdv_protocol(
            lci::detail::parse_attr_rdv_protocol(p.rdv_protocol, "test"))
        .max_msg_size(p.max_msg_size)();
  }
  void TearDown() override { lci::g_runtime_fina(); }
};

// The ops each thread posts: a byte budget (64 MiB is sent once), at most
// 48 ops, spread over the threads (fewer threads post when there are fewer
// ops; the others only progress).
size_t count_ops(size_t size)
{
  const size_t budget = size_t(4) << 20;
  if (size == 0) return 48;
  return std::max<size_t>(1, std::min<size_t>(48, budget / size));
}

TEST_P(P2pMatrix, EveryByteAndExactlyOnce)
{
  const param_t& p = GetParam();
  const size_t size = resolve_size(p.size);
  const size_t nops = count_ops(size);
  const bool rma = p.op == op_t::put || p.op == op_t::put_signal ||
                   p.op == op_t::get || p.op == op_t::get_signal;
  const bool has_remote =
      p.op == op_t::am || p.op == op_t::put_signal || p.op == op_t::get_signal;
  const int rank = lci::get_rank_me();

  std::vector<slot_t> slots(nops);
  // the remote region of put / get: one slice per op
  std::vector<unsigned char> region(std::max<size_t>(1, nops * size), 0);
  lci::mr_t mr;
  lci::rmr_t rmr;
  if (rma) {
    mr = lci::register_memory(region.data(), region.size());
    rmr = lci::get_rmr(mr);
  }
  for (size_t i = 0; i < nops; ++i) {
    slot_t& s = slots[i];
    s.out.resize(size);
    if (p.op == op_t::get || p.op == op_t::get_signal) {
      fill_pattern(region.data() + i * size, size, seed_of(rank, i));
      std::fill(s.out.begin(), s.out.end(), 0);
    } else {
      fill_pattern(s.out.data(), size, seed_of(rank, i));
    }
    if (p.op == op_t::sendrecv) s.in.assign(size + kCanaryLen, kCanary);
  }

  std::atomic<int> failures{0};
  // local completions: a send, put or get (buffer, size, tag, context)
  counting_comp_t local(nops, [&](const lci::status_t& st) {
    slot_t& s = slots[st.tag];
    bool ok = st.is_done() && st.rank == 0 && st.size == size &&
              st.buffer == static_cast<void*>(s.out.data()) &&
              st.user_context == &s;
    if (ok && (p.op == op_t::get || p.op == op_t::get_signal))
      ok = first_pattern_mismatch(s.out.data(), size, seed_of(rank, st.tag)) ==
           -1;
    if (ok && (p.op == op_t::put || p.op == op_t::put_signal))
      ok = first_pattern_mismatch(region.data() + st.tag * size, size,
                                  seed_of(rank, st.tag)) == -1;
    if (!ok) failures.fetch_add(1);
  });
  // receives
  counting_comp_t recvs(nops, [&](const lci::status_t& st) {
    slot_t& s = slots[st.tag];
    bool ok =
        st.is_done() && st.rank == 0 && st.size == size &&
        st.buffer == static_cast<void*>(s.in.data()) &&
        st.user_context == &s.in &&
        first_pattern_mismatch(s.in.data(), size, seed_of(rank, st.tag)) == -1;
    for (size_t k = size; k < s.in.size(); ++k)
      if (s.in[k] != kCanary) ok = false;
    if (!ok) failures.fetch_add(1);
  });
  // the target's remote completion: an active message or a signal
  counting_comp_t remote(nops, [&](const lci::status_t& st) {
    bool ok = st.is_done() && st.rank == 0 && st.size == size &&
              st.user_context == nullptr;
    if (p.op == op_t::am) {
      ok = ok &&
           first_pattern_mismatch(st.buffer, size, seed_of(rank, st.tag)) == -1;
      std::free(st.buffer);
    } else {
      // the signal names the bytes at this end, which hold the data
      unsigned char* at = region.data() + st.tag * size;
      ok = ok && st.buffer == static_cast<void*>(at) &&
           first_pattern_mismatch(at, size, seed_of(rank, st.tag)) == -1;
    }
    if (!ok) failures.fetch_add(1);
  });
  lci::comp_t local_comp(&local), recv_comp(&recvs), remote_comp(&remote);
  lci::rcomp_t rcomp =
      has_remote ? lci::register_rcomp(remote_comp) : lci::RCOMP_NULL;

  auto post = [&](size_t i) {
    slot_t& s = slots[i];
    const lci::tag_t tag = i;
    auto retry = [&](auto&& f) {
      lci::status_t st;
      for (;;) {
        st = f();
        if (!st.is_retry()) return st;
        lci::progress();
      }
    };
    lci::status_t st;
    switch (p.op) {
      case op_t::sendrecv: {
        // even ops: receive first; odd: send first (unexpected message)
        auto recv = [&] {
          lci::status_t r =
              lci::post_recv_x(0, s.in.data(), s.in.size(), tag, recv_comp)
                  .user_context(&s.in)();
          if (r.is_done()) {
            s.done_now_recv = true;
            recv_comp.get_impl()->signal(r);  // same checks
          }
        };
        if (i % 2 == 0) recv();
        st = retry([&] {
          return lci::post_send_x(0, s.out.data(), size, tag, local_comp)
              .user_context(&s)();
        });
        if (i % 2 == 1) recv();
        break;
      }
      case op_t::am:
        st = retry([&] {
          return lci::post_am_x(0, s.out.data(), size, local_comp, rcomp)
              .tag(tag)
              .user_context(&s)();
        });
        break;
      case op_t::put:
      case op_t::put_signal:
        st = retry([&] {
          return lci::post_put_x(0, s.out.data(), size, local_comp, i * size,
                                 rmr)
              .tag(tag)
              .remote_comp(p.op == op_t::put_signal ? rcomp : lci::RCOMP_NULL)
              .user_context(&s)();
        });
        break;
      case op_t::get:
      case op_t::get_signal:
        st = retry([&] {
          return lci::post_get_x(0, s.out.data(), size, local_comp, i * size,
                                 rmr)
              .tag(tag)
              .remote_comp(p.op == op_t::get_signal ? rcomp : lci::RCOMP_NULL)
              .user_context(&s)();
        });
        break;
    }
    if (st.is_done()) {
      s.done_now_local = true;
      local.signal(st);  // the same checks as a signalled completion
    } else if (!st.is_posted()) {
      failures.fetch_add(1);
    }
  };

  // threads take ops round-robin; all of them progress until everything is
  // complete
  const size_t expected_remote = has_remote ? nops : 0;
  const size_t expected_recv = p.op == op_t::sendrecv ? nops : 0;
  auto complete = [&] {
    return static_cast<size_t>(local.total()) == nops &&
           static_cast<size_t>(recvs.total()) == expected_recv &&
           static_cast<size_t>(remote.total()) == expected_remote;
  };
  std::atomic<bool> timed_out{false};
  auto worker = [&](int t) {
    for (size_t i = t; i < nops; i += p.threads) post(i);
    // 8 threads on few cores: let the one that has work run
    auto deadline = std::chrono::steady_clock::now() + lci_test::kWaitLimit;
    while (!complete()) {
      if (std::chrono::steady_clock::now() > deadline) {
        timed_out = true;
        break;
      }
      if (!lci::progress().is_done()) std::this_thread::yield();
    }
  };
  std::vector<std::thread> threads;
  for (int t = 1; t < p.threads; ++t) threads.emplace_back(worker, t);
  worker(0);
  for (auto& th : threads) th.join();
  ASSERT_FALSE(timed_out) << "local " << local.total() << " recv "
                          << recvs.total() << " remote " << remote.total()
                          << " of " << nops;
  // nothing more may arrive
  progress_until_quiet();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(local.bad() + recvs.bad() + remote.bad(), 0);
  for (size_t i = 0; i < nops; ++i) {
    EXPECT_EQ(local.count(i), 1) << "op " << i;
    if (expected_recv) {
      EXPECT_EQ(recvs.count(i), 1) << "receive " << i;
    }
    if (expected_remote) {
      EXPECT_EQ(remote.count(i), 1) << "remote " << i;
    }
  }
  // what can be done at once and what cannot
  const bool long_op = rma ? size > 0 : size > lci::get_max_bcopy_size();
  for (size_t i = 0; i < nops; ++i)
    EXPECT_EQ(slots[i].done_now_local, !long_op) << "op " << i;
  if (has_remote) lci::deregister_rcomp(rcomp);
  if (rma) lci::deregister_memory(&mr);
}

std::vector<param_t> matrix()
{
  std::vector<param_t> v;
  for (const char* prov : {"shm", "tcp"})
    for (op_t op : {op_t::sendrecv, op_t::am, op_t::put, op_t::put_signal,
                    op_t::get, op_t::get_signal})
      for (size_case_t s :
           {size_case_t::zero, size_case_t::one, size_case_t::eight,
            size_case_t::inject, size_case_t::inject1, size_case_t::eager,
            size_case_t::eager1, size_case_t::k64, size_case_t::m1,
            size_case_t::m64})
        for (int threads : {1, 8})
          v.push_back({op, s, threads, prov, "auto_select", 0});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Table1, P2pMatrix, ::testing::ValuesIn(matrix()),
                         param_name);

// The three rendezvous variants, and transfers split at a small
// max_msg_size (every op: 1 MiB in 64 KiB pieces).
std::vector<param_t> variants()
{
  std::vector<param_t> v;
  for (const char* prov : {"shm", "tcp"})
    for (const char* proto : {"write", "writeimm", "get"})
      for (op_t op : {op_t::sendrecv, op_t::am})
        for (size_case_t s : {size_case_t::eager1, size_case_t::m1})
          v.push_back({op, s, 1, prov, proto, 0});
  for (const char* proto : {"write", "writeimm", "get"})
    for (op_t op : {op_t::sendrecv, op_t::am})
      v.push_back({op, size_case_t::m1, 8, "shm", proto, 65536});
  for (op_t op : {op_t::put, op_t::put_signal, op_t::get, op_t::get_signal})
    v.push_back({op, size_case_t::m1, 1, "shm", "auto_select", 65536});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Rendezvous, P2pMatrix, ::testing::ValuesIn(variants()),
                         param_name);

// ---------------------------------------------------------------------------
// Unexpected messages of every size, on both providers and the native
// shm backend (across processes: tests/multi/mp_flood.cpp): every send is
// posted (and has arrived) before any receive; the rendezvous ones cannot
// complete until their receive is posted. Receives are posted in reverse.

// "native": the native shared-memory backend (src/net/shm), the process
// through its own ring; otherwise a libfabric provider
template <typename X>
X&& with_provider(X&& x, const char* provider)
{
  if (std::string(provider) == "native") return std::move(x).backend("shm");
  return std::move(x).ofi_provider_name(provider);
}

// The largest eager send of `rt` to itself: a packet's payload, or on the
// native shm backend its route's larger limit (16,408 bytes with the
// 16-byte header, route_caps_t::max_eager in net/shm/device.hpp: a 16 KiB
// payload goes eagerly).
size_t eager_limit_of(const char* provider, lci::runtime_t rt)
{
  const size_t packet = lci::get_max_bcopy_size_x().runtime(rt)();
  if (std::string(provider) != "native") return packet;
  return std::max(packet, size_t(16 << 10) + 8);
}

class P2pProvider : public ::testing::TestWithParam<const char*>
{
 protected:
  void SetUp() override
  {
    ::setenv("FI_TCP_IFACE", "lo", 1);
    with_provider(lci::g_runtime_init_x(), GetParam())();
    if (std::string(GetParam()) == "native") {
      ASSERT_EQ(lci::get_g_runtime().get_attr_backend(), "shm");
    }
  }
  void TearDown() override { lci::g_runtime_fina(); }
};

TEST_P(P2pProvider, FloodOfUnexpectedMessages)
{
  const size_t eager = eager_limit_of(GetParam(), lci::get_g_runtime());
  const size_t sizes[] = {8, eager, eager + 1, 64 << 10, 300 << 10};
  const size_t n = 40;
  std::vector<std::vector<unsigned char>> out(n), in(n);
  lci::comp_t sends = lci::alloc_counter();
  size_t nrdv = 0;
  for (size_t i = 0; i < n; ++i) {
    const size_t size = sizes[i % 5];
    out[i].resize(size);
    in[i].assign(size, 0);
    fill_pattern(out[i].data(), size, seed_of(0, i));
    lci::status_t st = lci_test::post_retry(
        [&] { return lci::post_send(0, out[i].data(), size, i, sends); });
    ASSERT_FALSE(st.is_retry());
    EXPECT_EQ(st.is_posted(), size > eager) << i;
    if (st.is_posted()) ++nrdv;
  }
  progress_until_quiet();
  EXPECT_EQ(lci::counter_get(sends), 0)
      << "a rendezvous send completed without a receive";
  lci::comp_t recvs = lci::alloc_counter();
  size_t posted = 0;
  for (size_t k = n; k-- > 0;) {
    lci::status_t st = lci::post_recv(0, in[k].data(), in[k].size(), k, recvs);
    // an unexpected eager message completes the receive at once
    EXPECT_EQ(st.is_posted(), in[k].size() > eager) << k;
    if (st.is_posted()) ++posted;
  }
  ASSERT_TRUE(progress_until([&] {
    return lci::counter_get(recvs) == static_cast<int64_t>(posted) &&
           lci::counter_get(sends) == static_cast<int64_t>(nrdv);
  }));
  progress_until_quiet();
  EXPECT_EQ(lci::counter_get(recvs), static_cast<int64_t>(posted));
  EXPECT_EQ(lci::counter_get(sends), static_cast<int64_t>(nrdv));
  for (size_t i = 0; i < n; ++i)
    EXPECT_EQ(first_pattern_mismatch(in[i].data(), in[i].size(), seed_of(0, i)),
              -1)
        << "message " << i;
  lci::free_comp(&recvs);
  lci::free_comp(&sends);

  // active messages, eager and rendezvous, arriving before anyone looks
  lci::comp_t cq = lci::alloc_cq();
  lci::rcomp_t rc = lci::register_rcomp(cq);
  for (size_t i = 0; i < n; ++i)
    ASSERT_FALSE(lci_test::post_retry([&] {
                   return lci::post_am_x(0, out[i].data(), out[i].size(),
                                         lci::COMP_NULL_RETRY, rc)
                       .tag(i)();
                 }).is_retry());
  std::vector<int> seen(n, 0);
  for (size_t k = 0; k < n; ++k) {
    lci::status_t st = lci_test::pop_wait(cq);
    ASSERT_TRUE(st.is_done());
    ASSERT_LT(st.tag, n);
    ++seen[st.tag];
    EXPECT_EQ(st.size, out[st.tag].size());
    EXPECT_EQ(first_pattern_mismatch(st.buffer, st.size, seed_of(0, st.tag)),
              -1);
    std::free(st.buffer);
  }
  progress_until_quiet();
  EXPECT_TRUE(lci::cq_pop(cq).is_retry());
  for (size_t i = 0; i < n; ++i) EXPECT_EQ(seen[i], 1) << i;
  lci::deregister_rcomp(rc);
  lci::free_comp(&cq);
}

// The sender outruns a one-packet pool, with nothing injected (so even the
// rendezvous requests need a packet): every post after the first meets
// retry at least once; nothing is lost or duplicated. The native shm
// backend copies every eager message and request into its ring (its route
// copies, net::route_caps_t), so there no send waits for a packet.
TEST_P(P2pProvider, TinyPacketPool)
{
  lci::runtime_t rt =
      with_provider(lci::alloc_runtime_x(), GetParam()).max_inject_size(0)();
  lci::packet_pool_t pool =
      lci::alloc_packet_pool_x().runtime(rt).npackets(1)();
  const size_t eager = eager_limit_of(GetParam(), rt);
  const size_t n = 30;
  std::vector<std::vector<unsigned char>> out(n), in(n);
  lci::comp_t sends = lci::alloc_counter();
  size_t retried = 0;
  for (size_t i = 0; i < n; ++i) {
    const size_t size = i % 3 == 2 ? eager + 1 : 1000;
    out[i].resize(size);
    in[i].assign(size, 0);
    fill_pattern(out[i].data(), size, seed_of(0, i));
    bool saw_retry = false;
    lci::status_t st;
    for (;;) {
      st = lci::post_send_x(0, out[i].data(), size, i, sends)
               .runtime(rt)
               .packet_pool(pool)();
      if (!st.is_retry()) break;
      saw_retry = true;
      lci::progress_x().runtime(rt)();
    }
    if (saw_retry) ++retried;
  }
  if (std::string(GetParam()) == "native")
    EXPECT_EQ(retried, 0u);
  else
    EXPECT_GE(retried, n - 1);
  lci::comp_t recvs = lci::alloc_counter();
  size_t posted = 0;
  for (size_t i = 0; i < n; ++i)
    if (lci::post_recv_x(0, in[i].data(), in[i].size(), i, recvs)
            .runtime(rt)()
            .is_posted())
      ++posted;
  ASSERT_TRUE(progress_until(
      [&] {
        return lci::counter_get(recvs) == static_cast<int64_t>(posted) &&
               lci::counter_get(sends) == static_cast<int64_t>(n / 3);
      },
      lci::device_t(), rt));
  progress_until_quiet(lci::device_t(), rt);
  EXPECT_EQ(lci::counter_get(recvs), static_cast<int64_t>(posted));
  EXPECT_EQ(lci::counter_get(sends), static_cast<int64_t>(n / 3));
  for (size_t i = 0; i < n; ++i)
    EXPECT_EQ(first_pattern_mismatch(in[i].data(), in[i].size(), seed_of(0, i)),
              -1)
        << "message " << i;
  lci::free_comp(&recvs);
  lci::free_comp(&sends);
  lci::free_packet_pool_x(&pool).runtime(rt)();
  lci::free_runtime(&rt);
}

// Every size from 0 to 300 bytes, where the native shm backend copies a
// message into the poll's scratch by size class (the header slot's fixed
// 24 bytes, inline moves up to 128 bytes, memcpy up to its copy limit) or
// lends it: all sent before any receive (unexpected, a poll of many
// messages filling its scratch), then all received before any send
// (expected, a poll of one or a few); each lands whole, with nothing
// written past its size in the receive buffer.
TEST_P(P2pProvider, EverySmallSizeWhole)
{
  constexpr size_t kMax = 300;
  constexpr size_t kGuard = 64;
  const size_t n = kMax + 1;
  std::vector<std::vector<unsigned char>> out(n), in(n);
  for (size_t i = 0; i < n; ++i) {
    out[i].resize(i);
    fill_pattern(out[i].data(), i, seed_of(0, i));
  }
  for (bool unexpected : {true, false}) {
    for (size_t i = 0; i < n; ++i) in[i].assign(i + kGuard, 0xee);
    lci::comp_t recvs = lci::alloc_counter();
    lci::comp_t sends = lci::alloc_counter();
    auto send_all = [&] {
      for (size_t i = 0; i < n; ++i) {
        lci::status_t st = lci_test::post_retry(
            [&] { return lci::post_send(0, out[i].data(), i, i, sends); });
        ASSERT_TRUE(st.is_done()) << i;
      }
    };
    if (unexpected) {
      send_all();
      progress_until_quiet();
    }
    int64_t at_once = 0;  // receives done in the post
    for (size_t i = 0; i < n; ++i) {
      lci::status_t st = lci::post_recv(0, in[i].data(), i, i, recvs);
      ASSERT_FALSE(st.is_retry()) << i;
      if (st.is_done()) {
        EXPECT_EQ(st.size, i);
        ++at_once;
      }
    }
    EXPECT_EQ(at_once, unexpected ? static_cast<int64_t>(n) : 0);
    if (!unexpected) send_all();
    ASSERT_TRUE(progress_until([&] {
      return lci::counter_get(recvs) + at_once == static_cast<int64_t>(n);
    }));
    for (size_t i = 0; i < n; ++i) {
      EXPECT_EQ(first_pattern_mismatch(in[i].data(), i, seed_of(0, i)), -1)
          << "size " << i << (unexpected ? ", unexpected" : ", expected");
      for (size_t k = i; k < i + kGuard; ++k)
        ASSERT_EQ(in[i][k], 0xee)
            << "size " << i << ": byte " << k << " written past the message";
    }
    lci::free_comp(&sends);
    lci::free_comp(&recvs);
  }
}

// Transfers cut into many small fragments through a device with a short
// send queue: the progress engine posts what the queue takes and leaves the
// rest in the backlog; everything arrives.
TEST_P(P2pProvider, ShortSendQueueManyFragments)
{
  lci::runtime_t rt = with_provider(lci::alloc_runtime_x(), GetParam())
                          .max_msg_size(4096)
                          .alloc_default_device(false)();
  lci::device_t dev = lci::alloc_device_x().runtime(rt).net_max_sends(8)();
  const size_t size = 512 << 10;  // 128 fragments
  const int n = 4;
  std::vector<std::vector<unsigned char>> out(n), in(n), region(n);
  lci::comp_t done = lci::alloc_counter();
  std::vector<lci::mr_t> mrs(n);
  for (int i = 0; i < n; ++i) {
    out[i].resize(size);
    in[i].assign(size, 0);
    region[i].assign(size, 0);
    fill_pattern(out[i].data(), size, seed_of(0, i));
    mrs[i] = lci::register_memory_x(region[i].data(), size).runtime(rt)();
  }
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE(lci::post_recv_x(0, in[i].data(), size, i, done)
                    .runtime(rt)
                    .device(dev)()
                    .is_posted());
    lci::status_t st = lci_test::post_retry(
        [&] {
          return lci::post_send_x(0, out[i].data(), size, i, done)
              .runtime(rt)
              .device(dev)();
        },
        dev, rt);
    ASSERT_TRUE(st.is_posted()) << st.error.get_str();
    st = lci_test::post_retry(
        [&] {
          return lci::post_put_x(0, out[i].data(), size, done, 0,
                                 lci::get_rmr(mrs[i]))
              .runtime(rt)
              .device(dev)();
        },
        dev, rt);
    ASSERT_TRUE(st.is_posted()) << st.error.get_str();
  }
  ASSERT_TRUE(
      progress_until([&] { return lci::counter_get(done) == 3 * n; }, dev, rt));
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(first_pattern_mismatch(in[i].data(), size, seed_of(0, i)), -1);
    EXPECT_EQ(first_pattern_mismatch(region[i].data(), size, seed_of(0, i)),
              -1);
    lci::deregister_memory_x(&mrs[i]).runtime(rt)();
  }
  lci::free_comp(&done);
  lci::free_device_x(&dev).runtime(rt)();
  lci::free_runtime(&rt);
}

INSTANTIATE_TEST_SUITE_P(Providers, P2pProvider,
                         ::testing::Values("shm", "tcp", "native"));

// allow_retry(false) on a rendezvous send and on a put: queued in the
// backlog without copying (posted_backlog), completed by progress, the
// completion signalled exactly once.
TEST(P2pBacklog, RendezvousAndPutFromTheBacklog)
{
  lci::runtime_t rt = lci::alloc_runtime_x().max_inject_size(0)();
  lci::packet_pool_t pool =
      lci::alloc_packet_pool_x().runtime(rt).npackets(1)();
  const size_t big = lci::get_max_bcopy_size_x().runtime(rt)() * 3;
  std::vector<unsigned char> small(100, 's'), out(big), in(big, 0),
      region(big, 0), small_in(100);
  fill_pattern(out.data(), big, 77);
  lci::mr_t mr = lci::register_memory_x(region.data(), big).runtime(rt)();
  lci::comp_t cq = lci::alloc_cq();
  // take the only packet
  ASSERT_TRUE(lci_test::post_retry(
                  [&] {
                    return lci::post_send_x(0, small.data(), small.size(), 1,
                                            lci::COMP_NULL_RETRY)
                        .runtime(rt)
                        .packet_pool(pool)();
                  },
                  lci::device_t(), rt)
                  .is_done());
  int ctx_send = 0, ctx_put = 0;
  lci::status_t s1 = lci::post_send_x(0, out.data(), big, 2, cq)
                         .runtime(rt)
                         .packet_pool(pool)
                         .allow_retry(false)
                         .user_context(&ctx_send)();
  EXPECT_EQ(s1.error.errorcode, lci::errorcode_t::posted_backlog);
  // behind it in the backlog
  lci::status_t s2 =
      lci::post_put_x(0, out.data(), big, cq, 0, lci::get_rmr(mr))
          .runtime(rt)
          .allow_retry(false)
          .user_context(&ctx_put)();
  EXPECT_EQ(s2.error.errorcode, lci::errorcode_t::posted_backlog);
  EXPECT_TRUE(lci::post_recv_x(0, small_in.data(), 100, 1, lci::COMP_NULL)
                  .runtime(rt)()
                  .is_done());
  lci::comp_t rsync = lci::alloc_sync();
  lci::status_t r = lci::post_recv_x(0, in.data(), big, 2, rsync).runtime(rt)();
  if (r.is_posted()) lci::sync_wait_x(rsync, &r).runtime(rt)();
  EXPECT_EQ(r.size, big);
  EXPECT_EQ(in, out);
  int got_send = 0, got_put = 0;
  ASSERT_TRUE(progress_until(
      [&] {
        lci::status_t st = lci::cq_pop(cq);
        if (st.is_done()) {
          if (st.user_context == &ctx_send) ++got_send;
          if (st.user_context == &ctx_put) ++got_put;
        }
        return got_send + got_put >= 2;
      },
      lci::device_t(), rt));
  progress_until_quiet(lci::device_t(), rt);
  EXPECT_TRUE(lci::cq_pop(cq).is_retry());
  EXPECT_EQ(got_send, 1);
  EXPECT_EQ(got_put, 1);
  EXPECT_EQ(region, out);
  lci::free_comp(&rsync);
  lci::free_comp(&cq);
  lci::deregister_memory_x(&mr).runtime(rt)();
  lci::free_packet_pool_x(&pool).runtime(rt)();
  lci::free_runtime(&rt);
}

using lci_test::LciTest;

// Rendezvous messages follow the matching rules of eager ones: several
// engines, wildcard receives with the matching policy of the send.
TEST_F(LciTest, RendezvousMatchingEnginesAndPolicies)
{
  const size_t size = lci::get_max_bcopy_size() * 2;
  lci::matching_engine_t me2 = lci::alloc_matching_engine();
  std::vector<unsigned char> a(size), b(size), c(size), d(size);
  fill_pattern(a.data(), size, 1);
  fill_pattern(b.data(), size, 2);
  fill_pattern(c.data(), size, 3);
  fill_pattern(d.data(), size, 4);
  lci::comp_t sends = lci::alloc_counter();
  auto send = [&](std::vector<unsigned char>& buf, lci::tag_t tag,
                  lci::matching_engine_t me, lci::matching_policy_t pol) {
    ASSERT_TRUE(lci_test::post_retry([&] {
                  return lci::post_send_x(0, buf.data(), size, tag, sends)
                      .matching_engine(me)
                      .matching_policy(pol)();
                }).is_posted());
  };
  send(a, 5, lci::matching_engine_t(), lci::matching_policy_t::rank_tag);
  send(b, 5, me2, lci::matching_policy_t::rank_tag);
  send(c, 9, lci::matching_engine_t(), lci::matching_policy_t::tag_only);
  send(d, 11, lci::matching_engine_t(), lci::matching_policy_t::rank_only);
  progress_until_quiet();
  std::vector<unsigned char> in(size);
  // engine 2 first: its message, not the default engine's
  lci::status_t r = lci::post_recv_x(0, in.data(), size, 5, lci::COMP_NULL)
                        .matching_engine(me2)();
  EXPECT_EQ(first_pattern_mismatch(in.data(), size, 2), -1);
  r = lci::post_recv(0, in.data(), size, 5, lci::COMP_NULL);
  EXPECT_EQ(first_pattern_mismatch(in.data(), size, 1), -1);
  // ANY_SOURCE matches the tag_only send
  r = lci::post_recv(lci::ANY_SOURCE, in.data(), size, 9, lci::COMP_NULL);
  EXPECT_EQ(r.tag, 9u);
  EXPECT_EQ(r.rank, 0);
  EXPECT_EQ(first_pattern_mismatch(in.data(), size, 3), -1);
  // ANY_TAG matches the rank_only send, and reports its tag
  r = lci::post_recv(0, in.data(), size, lci::ANY_TAG, lci::COMP_NULL);
  EXPECT_EQ(r.tag, 11u);
  EXPECT_EQ(first_pattern_mismatch(in.data(), size, 4), -1);
  ASSERT_TRUE(progress_until([&] { return lci::counter_get(sends) == 4; }));
  lci::free_comp(&sends);
  lci::free_matching_engine(&me2);
}

// Registrations given by the user (.mr() on both sides of a rendezvous, on
// the local side of a put and a get), and on-the-fly registration of every
// local buffer (register_local), through a second device.
TEST(P2pRegistration, UserAndOnTheFlyRegistrations)
{
  for (bool register_local : {false, true}) {
    SCOPED_TRACE(register_local);
    lci::runtime_t rt = lci::alloc_runtime_x().register_local(register_local)();
    lci::device_t dev = lci::alloc_device_x().runtime(rt)();
    const size_t size = 200 << 10;
    std::vector<unsigned char> out(size), in(size, 0), region(size, 0),
        back(size, 0);
    fill_pattern(out.data(), size, 9);
    lci::mr_t mr_out = lci::register_memory_x(out.data(), size).runtime(rt)();
    lci::mr_t mr_in = lci::register_memory_x(in.data(), size).runtime(rt)();
    lci::mr_t mr_region =
        lci::register_memory_x(region.data(), size).runtime(rt)();
    for (bool user_mr : {false, true}) {
      std::fill(in.begin(), in.end(), 0);
      std::fill(region.begin(), region.end(), 0);
      std::fill(back.begin(), back.end(), 0);
      lci::comp_t sync = lci::alloc_sync_x().threshold(2)();
      ASSERT_TRUE(lci::post_recv_x(0, in.data(), size, 3, sync)
                      .runtime(rt)
                      .device(dev)
                      .mr(user_mr ? mr_in : lci::mr_t())()
                      .is_posted());
      ASSERT_TRUE(lci_test::post_retry(
                      [&] {
                        return lci::post_send_x(0, out.data(), size, 3, sync)
                            .runtime(rt)
                            .device(dev)
                            .mr(user_mr ? mr_out : lci::mr_t())();
                      },
                      dev, rt)
                      .is_posted());
      lci::sync_wait_x(sync, nullptr).runtime(rt).device(dev)();
      EXPECT_EQ(in, out);
      lci::rmr_t rmr = lci::get_rmr(mr_region);
      // the second half of out into the first half of the region, blocking
      EXPECT_TRUE(lci::post_put_x(0, out.data() + size / 2, size / 2,
                                  lci::COMP_NULL, 0, rmr)
                      .runtime(rt)
                      .device(dev)
                      .mr(user_mr ? mr_out : lci::mr_t())()
                      .is_done());
      EXPECT_TRUE(
          std::equal(out.begin() + size / 2, out.end(), region.begin()));
      EXPECT_TRUE(
          lci::post_get_x(0, back.data(), size / 2, lci::COMP_NULL, 0, rmr)
              .runtime(rt)
              .device(dev)()
              .is_done());
      EXPECT_TRUE(std::equal(back.begin(), back.begin() + size / 2,
                             out.begin() + size / 2));
      lci::free_comp(&sync);
    }
    lci::deregister_memory_x(&mr_out).runtime(rt)();
    lci::deregister_memory_x(&mr_in).runtime(rt)();
    lci::deregister_memory_x(&mr_region).runtime(rt)();
    lci::free_device_x(&dev).runtime(rt)();
    lci::free_runtime(&rt);
  }
}

// The attributes report what is in force.
TEST_F(LciTest, RendezvousAttributes)
{
  lci::runtime_t rt = lci::get_g_runtime();
  // auto resolves to writeimm on providers with immediate data (shm, tcp)
  EXPECT_EQ(rt.get_attr_rdv_protocol(), lci::attr_rdv_protocol_t::writeimm);
  EXPECT_GT(rt.get_attr_max_msg_size(), 0u);
  lci::runtime_t rt2 = lci::alloc_runtime_x()
                           .rdv_protocol(lci::attr_rdv_protocol_t::get)
                           .max_msg_size(12345)();
  EXPECT_EQ(rt2.get_attr_rdv_protocol(), lci::attr_rdv_protocol_t::get);
  EXPECT_STREQ(lci::get_attr_rdv_protocol_str(rt2.get_attr_rdv_protocol()),
               "get");
  EXPECT_EQ(rt2.get_attr_max_msg_size(), 12345u);
  lci::free_runtime(&rt2);
}

}  // namespace
