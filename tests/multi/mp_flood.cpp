// Flood and back-pressure between processes: the unit tests
// P2pProvider.{FloodOfUnexpectedMessages, TinyPacketPool,
// ShortSendQueueManyFragments} (tests/unit/test_p2p.cpp, one rank talking
// to itself) across ranks. Every rank sends to the next rank and receives
// from the previous one (2 ranks: each other).
//  1. Unexpected messages of every size (8 B, the eager limit, one above,
//     64 KiB, 300 KiB): all sends posted before any receive anywhere (the
//     rendezvous ones cannot complete before); receives posted in reverse
//     order; then as many active messages into a completion queue.
//  2. A one-packet pool on a runtime that injects nothing: every send after
//     the first meets retry (none on native shm, which copies sends into
//     its rings); nothing lost or duplicated.
//  3. A device with a send queue of 8 on a runtime with 4 KiB transfers:
//     512 KiB sends and puts in 128 fragments each, the rest in the
//     backlog; everything arrives.
// Every byte is checked. Exit status 0 on success. Run with lcrun -n N.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <lci.hpp>
#include <string>
#include <vector>

#include "mp_check.hpp"

namespace
{

using mp::g_failures;
using mp::g_rank;

unsigned char pattern(int src, uint64_t tag, size_t i)
{
  uint64_t x = (uint64_t(src) << 40) ^ (tag << 24) ^ i;
  x *= 0x9E3779B97F4A7C15ull;
  return static_cast<unsigned char>(x >> 56);
}

void fill(std::vector<unsigned char>& b, int src, uint64_t tag)
{
  for (size_t i = 0; i < b.size(); ++i) b[i] = pattern(src, tag, i);
}

long mismatch(const void* p, size_t n, int src, uint64_t tag)
{
  auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i)
    if (b[i] != pattern(src, tag, i)) return static_cast<long>(i);
  return -1;
}

// progress (on rt/dev, or the defaults) until pred, at most 60 s
bool progress_until(const std::function<bool()>& pred,
                    lci::runtime_t rt = lci::runtime_t(),
                    lci::device_t dev = lci::device_t())
{
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!pred()) {
    lci::progress_x().runtime(rt).device(dev)();
    if (std::chrono::steady_clock::now() > deadline) return false;
  }
  return true;
}

void progress_for_ms(int ms)
{
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < end) lci::progress();
}

// The global barrier, progressing `dev` of `rt` meanwhile: a peer's
// operation on that device may need this rank's progress to complete.
void barrier_progressing(lci::runtime_t rt, lci::device_t dev)
{
  lci::comp_t sync = lci::alloc_sync();
  lci::barrier_x().comp(sync)();
  while (!lci::sync_test(sync, nullptr)) {
    lci::progress();
    lci::progress_x().runtime(rt).device(dev)();
  }
  lci::free_comp(&sync);
}

template <typename Op>
lci::status_t post_retry(Op&& op, lci::runtime_t rt = lci::runtime_t(),
                         lci::device_t dev = lci::device_t())
{
  for (;;) {
    lci::status_t s = op();
    if (!s.is_retry()) return s;
    lci::progress_x().runtime(rt).device(dev)();
  }
}

// The eager limits to a peer of `rt`: a send up to `lo` bytes is eager,
// one above `hi` goes by rendezvous. Native shm routes take messages above
// a packet eagerly (16,408 bytes with the 16-byte header, a 16 KiB payload
// and 8 bytes more; route_caps_t::max_eager in net/shm/device.hpp); under
// hybrid a peer takes that limit when it is on this node and the packet's when
// not, which the test does not know, so there the sizes between the two may go
// either way.
struct eager_t {
  size_t lo, hi;
  // whether a send of `size` bytes going by rendezvous (`posted`) is right
  bool fits(size_t size, bool posted) const
  {
    if (size <= lo) return !posted;
    if (size > hi) return posted;
    return true;
  }
};

eager_t eager_limits_of(lci::runtime_t rt)
{
  const size_t packet = lci::get_max_bcopy_size_x().runtime(rt)();
  const size_t shm = std::max(packet, size_t(16 << 10) + 8);
  const std::string backend = rt.get_attr_backend();
  if (backend == "shm") return {shm, shm};
  if (backend == "hybrid") return {packet, shm};
  return {packet, packet};
}

void flood_of_unexpected(int next, int prev)
{
  const int me = g_rank;
  const eager_t eager = eager_limits_of(lci::get_g_runtime());
  const size_t sizes[] = {8, eager.lo, eager.lo + 1, 64 << 10, 300 << 10};
  const size_t n = 40;
  std::vector<std::vector<unsigned char>> out(n), in(n);
  lci::comp_t sends = lci::alloc_counter();
  int64_t nrdv = 0;
  for (size_t i = 0; i < n; ++i) {
    out[i].resize(sizes[i % 5]);
    in[i].assign(sizes[i % 5], 0);
    fill(out[i], me, i);
    lci::status_t st = post_retry([&] {
      return lci::post_send(next, out[i].data(), out[i].size(), i, sends);
    });
    CHECK(eager.fits(out[i].size(), st.is_posted()),
          "send %zu (%zu bytes): posted %d", i, out[i].size(), st.is_posted());
    if (st.is_posted()) ++nrdv;
  }
  // let the messages arrive; nobody has posted a receive yet
  progress_for_ms(20);
  CHECK(lci::counter_get(sends) == 0,
        "%lld rendezvous sends completed without a receive",
        static_cast<long long>(lci::counter_get(sends)));
  lci::barrier();
  lci::comp_t recvs = lci::alloc_counter();
  int64_t posted = 0;
  for (size_t k = n; k-- > 0;) {
    lci::status_t st =
        lci::post_recv(prev, in[k].data(), in[k].size(), k, recvs);
    CHECK(!st.is_retry(), "receive %zu: retry", k);
    if (st.is_posted()) ++posted;
  }
  CHECK(progress_until([&] {
          return lci::counter_get(recvs) == posted &&
                 lci::counter_get(sends) == nrdv;
        }),
        "flood: %lld of %lld receives, %lld of %lld sends",
        static_cast<long long>(lci::counter_get(recvs)),
        static_cast<long long>(posted),
        static_cast<long long>(lci::counter_get(sends)),
        static_cast<long long>(nrdv));
  for (size_t i = 0; i < n; ++i) {
    long bad = mismatch(in[i].data(), in[i].size(), prev, i);
    CHECK(bad < 0, "flood: message %zu (%zu bytes): byte %ld wrong", i,
          in[i].size(), bad);
  }
  lci::free_comp(&recvs);
  lci::free_comp(&sends);

  // active messages, eager and rendezvous, arriving before anyone looks
  lci::comp_t cq = lci::alloc_cq();
  lci::rcomp_t rc = lci::register_rcomp(cq);
  lci::barrier();  // every rank registered its rcomp
  for (size_t i = 0; i < n; ++i) {
    lci::status_t st = post_retry([&] {
      return lci::post_am_x(next, out[i].data(), out[i].size(),
                            lci::COMP_NULL_RETRY, rc)
          .tag(i)();
    });
    CHECK(!st.is_retry(), "am %zu: retry", i);
  }
  progress_for_ms(20);
  std::vector<int> seen(n, 0);
  for (size_t k = 0; k < n; ++k) {
    lci::status_t st;
    bool got = progress_until([&] {
      st = lci::cq_pop(cq);
      return !st.is_retry();
    });
    CHECK(got, "am: %zu of %zu arrived", k, n);
    if (!got) break;
    CHECK(st.rank == prev && st.tag < n, "am from %d tag %llu", st.rank,
          static_cast<unsigned long long>(st.tag));
    if (st.tag < n) {
      ++seen[st.tag];
      CHECK(st.size == out[st.tag].size() &&
                mismatch(st.buffer, st.size, prev, st.tag) < 0,
            "am %llu: %zu bytes, wrong content",
            static_cast<unsigned long long>(st.tag), st.size);
    }
    std::free(st.buffer);
  }
  for (size_t i = 0; i < n; ++i)
    CHECK(seen[i] == 1, "am %zu seen %d times", i, seen[i]);
  lci::barrier();
  CHECK(lci::cq_pop(cq).is_retry(), "am: the queue is not empty");
  lci::deregister_rcomp(rc);
  lci::free_comp(&cq);
}

void tiny_packet_pool(int next, int prev)
{
  const int me = g_rank;
  lci::runtime_t rt = lci::alloc_runtime_x().max_inject_size(0)();
  lci::packet_pool_t pool =
      lci::alloc_packet_pool_x().runtime(rt).npackets(1)();
  const eager_t eager = eager_limits_of(rt);
  const size_t n = 30;
  std::vector<std::vector<unsigned char>> out(n), in(n);
  lci::comp_t sends = lci::alloc_counter();
  size_t retried = 0;
  int64_t nrdv = 0;  // sends that went by rendezvous: the counter's count
  for (size_t i = 0; i < n; ++i) {
    const size_t size = i % 3 == 2 ? eager.lo + 1 : 1000;
    out[i].resize(size);
    in[i].assign(size, 0);
    fill(out[i], me, 1000 + i);
    bool saw_retry = false;
    for (;;) {
      lci::status_t st = lci::post_send_x(next, out[i].data(), size, i, sends)
                             .runtime(rt)
                             .packet_pool(pool)();
      if (!st.is_retry()) {
        CHECK(eager.fits(size, st.is_posted()),
              "tiny pool: send %zu (%zu bytes): posted %d", i, size,
              st.is_posted());
        if (st.is_posted()) ++nrdv;
        break;
      }
      saw_retry = true;
      lci::progress_x().runtime(rt)();
    }
    if (saw_retry) ++retried;
  }
  // the native shm backend copies every eager message and request into
  // its ring, the socket backend into its socket or output queue (their
  // routes copy): no send waits for a packet there; under hybrid that
  // holds for a peer on this node, while one on another node takes the
  // remote route, which copies (socket) or waits on every send (ofi)
  const std::string backend = rt.get_attr_backend();
  if (backend == "shm" || backend == "socket")
    CHECK(retried == 0, "%zu of %zu sends met retry on %s", retried, n,
          backend.c_str());
  else if (backend == "hybrid")
    CHECK(retried == 0 || retried >= n - 1,
          "%zu of %zu sends met retry: neither a copying route nor ofi's",
          retried, n);
  else
    CHECK(retried >= n - 1, "only %zu of %zu sends met retry", retried, n);
  lci::comp_t recvs = lci::alloc_counter();
  int64_t posted = 0;
  for (size_t i = 0; i < n; ++i)
    if (lci::post_recv_x(prev, in[i].data(), in[i].size(), i, recvs)
            .runtime(rt)()
            .is_posted())
      ++posted;
  CHECK(progress_until(
            [&] {
              return lci::counter_get(recvs) == posted &&
                     lci::counter_get(sends) == nrdv;
            },
            rt),
        "tiny pool: %lld of %lld receives, %lld of %lld sends",
        static_cast<long long>(lci::counter_get(recvs)),
        static_cast<long long>(posted),
        static_cast<long long>(lci::counter_get(sends)),
        static_cast<long long>(nrdv));
  for (size_t i = 0; i < n; ++i) {
    long bad = mismatch(in[i].data(), in[i].size(), prev, 1000 + i);
    CHECK(bad < 0, "tiny pool: message %zu: byte %ld wrong", i, bad);
  }
  lci::free_comp(&recvs);
  lci::free_comp(&sends);
  lci::barrier();
  lci::free_packet_pool_x(&pool).runtime(rt)();
  lci::free_runtime(&rt);
}

void short_send_queue(int next, int prev)
{
  const int me = g_rank;
  lci::runtime_t rt =
      lci::alloc_runtime_x().max_msg_size(4096).alloc_default_device(false)();
  lci::device_t dev = lci::alloc_device_x().runtime(rt).net_max_sends(8)();
  const size_t size = 512 << 10;  // 128 fragments
  const int n = 4;
  std::vector<std::vector<unsigned char>> out(n), in(n);
  std::vector<unsigned char> region(n * size, 0);
  lci::mr_t mr =
      lci::register_memory_x(region.data(), region.size()).runtime(rt)();
  // the previous rank puts into our region: its rmr goes there
  lci::rmr_t mine = lci::get_rmr(mr), theirs;
  post_retry([&] {
    return lci::post_send(prev, &mine, sizeof(mine), 77, lci::COMP_NULL);
  });
  lci::status_t rs =
      lci::post_recv(next, &theirs, sizeof(theirs), 77, lci::COMP_NULL);
  CHECK(rs.is_done(), "the rmr did not come");
  lci::comp_t done = lci::alloc_counter();
  for (int i = 0; i < n; ++i) {
    out[i].resize(size);
    in[i].assign(size, 0);
    fill(out[i], me, 2000 + i);
    CHECK(lci::post_recv_x(prev, in[i].data(), size, i, done)
              .runtime(rt)
              .device(dev)()
              .is_posted(),
          "receive %d not posted", i);
  }
  for (int i = 0; i < n; ++i) {
    lci::status_t st = post_retry(
        [&] {
          return lci::post_send_x(next, out[i].data(), size, i, done)
              .runtime(rt)
              .device(dev)();
        },
        rt, dev);
    CHECK(st.is_posted(), "send %d: %s", i, st.error.get_str());
    // rank 0's last put starts late, when its target may have completed
    // every operation of its own: the put still needs that target's
    // progress (below the CMA threshold native shm's second copy runs
    // there), which the barrier below must give
    if (me == 0 && i == n - 1)
      progress_until(
          [t = std::chrono::steady_clock::now()] {
            return std::chrono::steady_clock::now() - t >
                   std::chrono::milliseconds(200);
          },
          rt, dev);
    st = post_retry(
        [&] {
          return lci::post_put_x(next, out[i].data(), size, done, i * size,
                                 theirs)
              .runtime(rt)
              .device(dev)();
        },
        rt, dev);
    CHECK(st.is_posted(), "put %d: %s", i, st.error.get_str());
  }
  const bool all =
      progress_until([&] { return lci::counter_get(done) == 3 * n; }, rt, dev);
  CHECK(all, "short queue: %lld of %d completions",
        static_cast<long long>(lci::counter_get(done)), 3 * n);
  // operations still in flight own the buffers freed below
  if (!all) std::_Exit(mp::exit_status());
  // every rank's puts are complete once every rank is here: our region is
  // written; until then the previous rank's put may still need this
  // device's progress
  barrier_progressing(rt, dev);
  for (int i = 0; i < n; ++i) {
    long bad = mismatch(in[i].data(), size, prev, 2000 + i);
    CHECK(bad < 0, "short queue: message %d: byte %ld wrong", i, bad);
    bad = mismatch(region.data() + i * size, size, prev, 2000 + i);
    CHECK(bad < 0, "short queue: put %d: byte %ld wrong", i, bad);
  }
  lci::free_comp(&done);
  lci::deregister_memory_x(&mr).runtime(rt)();
  lci::barrier();
  lci::free_device_x(&dev).runtime(rt)();
  lci::free_runtime(&rt);
}

}  // namespace

int main()
{
  try {
    lci::g_runtime_init();
    g_rank = lci::get_rank_me();
    const int n = lci::get_rank_n();
    const int next = (g_rank + 1) % n, prev = (g_rank + n - 1) % n;
    flood_of_unexpected(next, prev);
    tiny_packet_pool(next, prev);
    short_send_queue(next, prev);
    lci::g_runtime_fina();
    if (g_rank == 0)
      std::printf("mp_flood: %d ranks: %s\n", n,
                  g_failures.load() ? "FAILED" : "ok");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", g_rank, e.what());
    return 1;
  }
  return g_failures.load() ? 1 : 0;
}
