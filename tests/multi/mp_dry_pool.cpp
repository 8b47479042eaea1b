// Multi-process check of a device whose packet pool runs dry while
// messages that need no receive buffer keep arriving (run with lcrun -n 2
// under the hybrid backend, LCI_ATTR_SHM_NODE_SPLIT=2: the two ranks on
// two "nodes", each rank's messages to itself through native shm, which
// hands them over in place). Rank 1 sends rank 0 more unexpected eager
// sends than rank 0's pool has packets, each too large for the poll's
// scratch buffer, so each lands in a pre-posted receive and keeps its
// packet; then the one send rank 0 waits for, behind them on the
// connection. Rank 0 meanwhile sends itself an active message before every
// progress call, so that no call finds nothing to do. The packets held by
// the unexpected sends must still be given back (each send moved to a heap
// copy) and receives re-posted, so that the awaited send arrives: within
// 10 s. Checked on rank 0: the awaited send and every unexpected one, byte
// by byte. Exit status 0 on success.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <lci.hpp>
#include <string>
#include <vector>

#include "core/introspect.hpp"
#include "mp_check.hpp"

namespace
{

using mp::g_failures;
using mp::g_rank;

constexpr size_t kPackets = 16;
constexpr size_t kUnexpected = 3 * kPackets;
constexpr lci::tag_t kTagHeld = 1, kTagAwaited = 2, kTagDone = 3;

unsigned char pattern(size_t seq, size_t i)
{
  return static_cast<unsigned char>(seq * 13 + i * 5 + 3);
}

std::vector<unsigned char> message(size_t seq, size_t size)
{
  std::vector<unsigned char> m(size);
  for (size_t i = 0; i < size; ++i) m[i] = pattern(seq, i);
  return m;
}

template <typename Pred>
bool progress_until(lci::device_t dev, Pred pred, int seconds)
{
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (!pred()) {
    lci::progress_x().device(dev)();
    if (std::chrono::steady_clock::now() > deadline) return false;
  }
  return true;
}

// the device's counters and its backend's summary, to say where a stall is
void dump_state(lci::device_t dev, lci::packet_pool_t pool)
{
  auto k = lci::introspect::get_counts(lci::runtime_t(), dev, pool);
  std::fprintf(stderr,
               "rank %d: pool %zu/%zu free, recvs posted %lld, sends pending "
               "%lld, backlog %zu, matching entries %zu, packets taken back "
               "%llu\n",
               g_rank, k.pool_free, k.pool_npackets,
               static_cast<long long>(k.recvs_posted),
               static_cast<long long>(k.sends_pending), k.backlog, k.me_entries,
               static_cast<unsigned long long>(k.held_released));
  std::string net = lci::introspect::net_state(lci::runtime_t(), dev);
  if (!net.empty())
    std::fprintf(stderr, "rank %d: net: %s\n", g_rank, net.c_str());
}

template <typename Op>
lci::status_t post(lci::device_t dev, Op&& op)
{
  for (;;) {
    lci::status_t s = op();
    if (!s.is_retry()) return s;
    lci::progress_x().device(dev)();
  }
}

// whether the sync signalled (remembered: a test that succeeds consumes
// the signal)
bool done(lci::comp_t sync, bool* seen)
{
  lci::status_t s;
  if (!*seen) *seen = lci::sync_test(sync, &s);
  return *seen;
}

void rank0(lci::device_t dev, lci::packet_pool_t pool, size_t size)
{
  lci::comp_t self = lci::alloc_counter();
  lci::rcomp_t to_self = lci::register_rcomp(self);
  std::vector<unsigned char> got(size, 0);
  lci::comp_t awaited = lci::alloc_sync();
  bool got_awaited = false;
  lci::status_t s = lci::post_recv_x(1, got.data(), size, kTagAwaited, awaited)
                        .device(dev)
                        .allow_retry(false)();
  CHECK(s.is_posted(), "the awaited receive: %s", s.error.get_str());
  // every progress call finds a message of this rank's own
  unsigned char b = 7;
  int64_t sent = 0;
  const bool arrived = progress_until(
      dev,
      [&] {
        post(dev, [&] {
          return lci::post_am_x(0, &b, 1, lci::COMP_NULL_RETRY, to_self)
              .device(dev)();
        });
        ++sent;
        return done(awaited, &got_awaited);
      },
      10);
  CHECK(arrived,
        "the awaited send did not arrive in 10 s while this rank's own "
        "messages kept coming (%lld of them)",
        static_cast<long long>(sent));
  if (!arrived) dump_state(dev, pool);
  // (it arrives once nothing else comes: the end of the test)
  CHECK(progress_until(
            dev, [&] { return done(awaited, &got_awaited); }, 60),
        "the awaited send never arrived");
  CHECK(progress_until(
            dev, [&] { return lci::counter_get(self) == sent; }, 60),
        "%lld of %lld messages to itself arrived",
        static_cast<long long>(lci::counter_get(self)),
        static_cast<long long>(sent));
  CHECK(got == message(kUnexpected, size), "the awaited send: wrong bytes");
  for (size_t i = 0; i < kUnexpected; ++i) {
    std::vector<unsigned char> held(size, 0);
    s = lci::post_recv_x(1, held.data(), size, kTagHeld, lci::COMP_NULL)
            .device(dev)();
    CHECK(s.is_done(), "held send %zu: %s", i, s.error.get_str());
    CHECK(held == message(i, size), "held send %zu: wrong bytes", i);
  }
  post(dev, [&] {
    return lci::post_send_x(1, nullptr, 0, kTagDone, lci::COMP_NULL)
        .device(dev)();
  });
  lci::deregister_rcomp(to_self);
  lci::free_comp(&self);
  lci::free_comp(&awaited);
}

void rank1(lci::device_t dev, size_t size)
{
  // in order on one connection: the awaited send last
  for (size_t i = 0; i <= kUnexpected; ++i) {
    std::vector<unsigned char> m = message(i, size);
    const lci::tag_t tag = i < kUnexpected ? kTagHeld : kTagAwaited;
    lci::status_t s = post(dev, [&] {
      return lci::post_send_x(0, m.data(), size, tag, lci::COMP_NULL)
          .device(dev)();
    });
    CHECK(s.is_done(), "send %zu: %s", i, s.error.get_str());
  }
  lci::comp_t end = lci::alloc_sync();
  bool ended = false;
  lci::status_t s = lci::post_recv_x(0, nullptr, 0, kTagDone, end)
                        .device(dev)
                        .allow_retry(false)();
  if (!s.is_done())
    CHECK(progress_until(
              dev, [&] { return done(end, &ended); }, 120),
          "rank 0 never finished");
  lci::free_comp(&end);
}

}  // namespace

int main()
{
  try {
    if (!mp::init_ranks("mp_dry_pool", 2)) return 1;
    lci::packet_pool_t pool = lci::alloc_packet_pool_x().npackets(kPackets)();
    lci::device_t dev =
        lci::alloc_device_x().packet_pool(pool).net_max_recvs(8)();
    // larger than any scratch buffer (4 KiB), sent eagerly
    const size_t size = lci::get_max_bcopy_size_x().packet_pool(pool)();
    CHECK(size > 4096, "the eager limit is %zu bytes: too small here", size);
    lci::barrier();
    if (g_failures == 0) {
      if (g_rank == 0)
        rank0(dev, pool, size);
      else
        rank1(dev, size);
    }
    lci::barrier();
    std::printf("mp_dry_pool: rank %d: %s (%d failures)\n", g_rank,
                g_failures ? "FAILED" : "ok", g_failures.load());
    lci::free_device(&dev);
    lci::free_packet_pool(&pool);
    lci::g_runtime_fina();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mp_dry_pool: rank %d: %s\n", g_rank, e.what());
    return 1;
  }
  return mp::exit_status();
}
