// Multi-process check of RMA and large messages between ranks.
//
// Phase 1 (every pair of ranks, self included): put, put with signal, get
// and get with signal at every protocol-boundary size up to 1 MiB, into and
// out of regions the peers registered and shipped as rmrs; every byte and
// every signal checked; a put's local completion means its data is visible
// (checked after a message that follows it).
// Phase 2 (--big-mib N, default 64): to the next rank, N MiB each way with
// send/recv, put and get, while a third thread floods the peer with 8-byte
// active messages (--flood M, default 20000); every byte checked, every
// active message exactly once. A progress thread runs meanwhile.
// Phase 3: an rmr used for the wrong rank is refused by the posting call.
// Exit status 0 on success. Run with lcrun -n N.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <lci.hpp>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "mp_check.hpp"

namespace
{

using mp::g_failures;
using mp::g_rank;

// The byte i of the payload that `src` sends with `tag`.
inline unsigned char pattern(int src, uint64_t tag, size_t i)
{
  uint64_t x = (static_cast<uint64_t>(src) << 40) ^ (tag << 20) ^ i;
  x *= 0x9E3779B97F4A7C15ull;
  return static_cast<unsigned char>(x >> 56);
}

void fill(unsigned char* p, size_t n, int src, uint64_t tag)
{
  for (size_t i = 0; i < n; ++i) p[i] = pattern(src, tag, i);
}

// Index of the first wrong byte, or -1.
long mismatch(const void* p, size_t n, int src, uint64_t tag)
{
  auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i)
    if (b[i] != pattern(src, tag, i)) return static_cast<long>(i);
  return -1;
}

template <typename Pred>
void wait_until(Pred pred, const char* what)
{
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!pred()) {
    lci::progress();
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "rank %d: timeout waiting for %s\n", g_rank, what);
      std::exit(2);
    }
  }
}

// Small blocking messages for the handshakes between phases.
void send_value(int to, uint64_t tag, uint64_t v)
{
  mp::post_retrying(
      [&] { return lci::post_send(to, &v, sizeof(v), tag, lci::COMP_NULL); });
}
uint64_t recv_value(int from, uint64_t tag)
{
  uint64_t v = 0;
  lci::post_recv(from, &v, sizeof(v), tag, lci::COMP_NULL);
  return v;
}
// Every rank tells every rank (self included) and hears from all.
void all_to_all_handshake(uint64_t tag)
{
  const int n = lci::get_rank_n();
  lci::comp_t sync = lci::alloc_sync_x().threshold(n)();
  std::vector<uint64_t> in(n);
  for (int r = 0; r < n; ++r) {
    lci::status_t s = lci::post_recv(r, &in[r], sizeof(uint64_t), tag, sync);
    if (s.is_done()) lci::comp_signal(sync, s);
  }
  for (int r = 0; r < n; ++r) send_value(r, tag, 1);
  wait_until([&] { return lci::sync_test(sync, nullptr); }, "handshake");
  lci::free_comp(&sync);
}

constexpr uint64_t kRmrTag = 900000;
constexpr uint64_t kPhaseTag = 900100;

// Every rank's rmr of a region, exchanged with eager messages.
std::vector<lci::rmr_t> exchange_rmrs(lci::rmr_t mine, uint64_t tag)
{
  const int n = lci::get_rank_n();
  std::vector<lci::rmr_t> all(n);
  lci::comp_t sync = lci::alloc_sync_x().threshold(n)();
  for (int r = 0; r < n; ++r) {
    lci::status_t s = lci::post_recv(r, &all[r], sizeof(lci::rmr_t), tag, sync);
    if (s.is_done()) lci::comp_signal(sync, s);
  }
  for (int r = 0; r < n; ++r)
    mp::post_retrying([&] {
      return lci::post_send(r, &mine, sizeof(mine), tag, lci::COMP_NULL);
    });
  wait_until([&] { return lci::sync_test(sync, nullptr); }, "rmrs");
  lci::free_comp(&sync);
  return all;
}

// ---------------------------------------------------------------------------
// Phase 1

// Counts the signals a rank receives, by (source, tag); checks the bytes a
// put with signal left, and that a get-with-signal names the served bytes.
class signal_comp_t : public lci::comp_impl_t
{
 public:
  signal_comp_t(int n, size_t ntags, unsigned char* region, size_t slot,
                size_t nsizes, const std::vector<size_t>& sizes)
      : n_(n),
        ntags_(ntags),
        counts_(new std::atomic<int>[n * ntags]),
        region_(region),
        slot_(slot),
        nsizes_(nsizes),
        sizes_(sizes)
  {
    for (size_t i = 0; i < n * ntags; ++i) counts_[i] = 0;
  }
  void signal(lci::status_t s) override
  {
    if (s.rank < 0 || s.rank >= n_ || s.tag >= ntags_) {
      CHECK(false, "signal with rank %d tag %llu", s.rank,
            static_cast<unsigned long long>(s.tag));
      return;
    }
    counts_[s.rank * ntags_ + s.tag].fetch_add(1);
    total_.fetch_add(1);
    // tags: put k -> k, get k -> nsizes + k
    const bool put = s.tag < nsizes_;
    const size_t k = put ? s.tag : s.tag - nsizes_;
    CHECK(s.size == sizes_[k], "signal size %zu, expected %zu", s.size,
          sizes_[k]);
    if (put) {
      unsigned char* at = region_ + (s.rank * nsizes_ + k) * slot_;
      CHECK(s.size == 0 || s.buffer == at, "put signal names %p, not %p",
            s.buffer, static_cast<void*>(at));
      CHECK(mismatch(at, s.size, s.rank, s.tag) == -1,
            "put with signal from %d size %zu: data not there at the signal",
            s.rank, s.size);
    }
  }
  int count(int src, size_t tag) const
  {
    return counts_[src * ntags_ + tag].load();
  }
  long total() const { return total_.load(); }

 private:
  int n_;
  size_t ntags_;
  std::unique_ptr<std::atomic<int>[]> counts_;
  std::atomic<long> total_{0};
  unsigned char* region_;
  size_t slot_;
  size_t nsizes_;
  std::vector<size_t> sizes_;
};

void phase_rma(const std::vector<size_t>& sizes)
{
  const int me = g_rank;
  const int n = lci::get_rank_n();
  const size_t nsizes = sizes.size();
  const size_t slot = 1 << 20;
  // puts land in `target` (slot (source, k)); gets read `source`
  std::vector<unsigned char> target(n * nsizes * slot, 0);
  std::vector<unsigned char> source(nsizes * slot);
  for (size_t k = 0; k < nsizes; ++k)
    fill(source.data() + k * slot, slot, me, 5000 + k);
  lci::mr_t tmr = lci::register_memory(target.data(), target.size());
  lci::mr_t smr = lci::register_memory(source.data(), source.size());
  signal_comp_t sig(n, 2 * nsizes, target.data(), slot, nsizes, sizes);
  lci::comp_t sigc(&sig);
  lci::rcomp_t rcomp = lci::register_rcomp(sigc);  // same order everywhere
  std::vector<lci::rmr_t> trmr = exchange_rmrs(lci::get_rmr(tmr), kRmrTag);
  std::vector<lci::rmr_t> srmr = exchange_rmrs(lci::get_rmr(smr), kRmrTag + 1);

  std::vector<std::vector<unsigned char>> out(n * nsizes), in(n * nsizes);
  lci::comp_t local = lci::alloc_counter();
  long posted = 0;
  for (int p = 0; p < n; ++p)
    for (size_t k = 0; k < nsizes; ++k) {
      const size_t size = sizes[k];
      auto& o = out[p * nsizes + k];
      o.resize(size);
      fill(o.data(), size, me, k);
      // put: signal on odd k
      lci::status_t s = mp::post_retrying([&] {
        return lci::post_put_x(p, o.data(), size, local,
                               (me * nsizes + k) * slot, trmr[p])
            .tag(k)
            .remote_comp(k % 2 ? rcomp : lci::RCOMP_NULL)();
      });
      CHECK(s.is_posted() == (size > 0), "put %zu returned %s", size,
            s.error.get_str());
      if (s.is_posted()) ++posted;
      // get: signal on even k
      auto& i = in[p * nsizes + k];
      i.assign(size, 0);
      s = mp::post_retrying([&] {
        return lci::post_get_x(p, i.data(), size, local, k * slot, srmr[p])
            .tag(nsizes + k)
            .remote_comp(k % 2 ? lci::RCOMP_NULL : rcomp)();
      });
      CHECK(s.is_posted() == (size > 0), "get %zu returned %s", size,
            s.error.get_str());
      if (s.is_posted()) ++posted;
    }
  wait_until([&] { return lci::counter_get(local) == posted; }, "rma local");
  for (int p = 0; p < n; ++p)
    for (size_t k = 0; k < nsizes; ++k)
      CHECK(mismatch(in[p * nsizes + k].data(), sizes[k], p, 5000 + k) == -1,
            "get from %d size %zu", p, sizes[k]);
  // our puts are complete, hence visible: tell everyone, then check theirs
  all_to_all_handshake(kPhaseTag);
  for (int p = 0; p < n; ++p)
    for (size_t k = 0; k < nsizes; ++k)
      CHECK(mismatch(target.data() + (p * nsizes + k) * slot, sizes[k], p, k) ==
                -1,
            "put from %d size %zu", p, sizes[k]);
  // signals: one per odd put and even get of every peer
  long expected = 0;
  for (size_t k = 0; k < nsizes; ++k) expected += n;
  wait_until([&] { return sig.total() == expected; }, "signals");
  for (int p = 0; p < n; ++p)
    for (size_t k = 0; k < nsizes; ++k) {
      CHECK(sig.count(p, k) == (k % 2 ? 1 : 0), "put signal (%d, %zu) x%d", p,
            k, sig.count(p, k));
      CHECK(sig.count(p, nsizes + k) == (k % 2 ? 0 : 1),
            "get signal (%d, %zu) x%d", p, k, sig.count(p, nsizes + k));
    }
  // nobody reads our regions any more once everybody is here
  all_to_all_handshake(kPhaseTag + 1);
  lci::deregister_rcomp(rcomp);
  lci::deregister_memory(&tmr);
  lci::deregister_memory(&smr);
  lci::free_comp(&local);
}

// ---------------------------------------------------------------------------
// Phase 2

constexpr uint64_t kBigSend = 1, kBigPut = 2, kBigGet = 3;

std::atomic<long> g_am_count{0};
std::unique_ptr<std::atomic<unsigned char>[]> g_am_seen;
size_t g_am_n = 0;
int g_am_from = -1;

void am_handler(lci::status_t s)
{
  bool ok = s.rank == g_am_from && s.size == 8 && s.tag < g_am_n &&
            mismatch(s.buffer, 8, s.rank, s.tag) == -1;
  CHECK(ok, "active message rank %d size %zu tag %llu", s.rank, s.size,
        static_cast<unsigned long long>(s.tag));
  if (ok) g_am_seen[s.tag].fetch_add(1);
  std::free(s.buffer);
  g_am_count.fetch_add(1);
}

void phase_big(size_t big, size_t flood)
{
  const int me = g_rank;
  const int n = lci::get_rank_n();
  const int to = (me + 1) % n, from = (me + n - 1) % n;
  g_am_n = flood;
  g_am_from = from;
  g_am_seen.reset(new std::atomic<unsigned char>[flood]);
  for (size_t i = 0; i < flood; ++i) g_am_seen[i] = 0;
  lci::comp_t handler = lci::alloc_handler(am_handler);
  lci::rcomp_t rcomp = lci::register_rcomp(handler);

  std::vector<unsigned char> sendbuf(big), recvbuf(big, 0), region(big, 0),
      source(big), getbuf(big, 0);
  fill(sendbuf.data(), big, me, kBigSend);
  fill(source.data(), big, me, kBigGet);
  lci::mr_t rmr_region = lci::register_memory(region.data(), big);
  lci::mr_t rmr_source = lci::register_memory(source.data(), big);
  std::vector<lci::rmr_t> regions =
      exchange_rmrs(lci::get_rmr(rmr_region), kRmrTag + 2);
  std::vector<lci::rmr_t> sources =
      exchange_rmrs(lci::get_rmr(rmr_source), kRmrTag + 3);
  all_to_all_handshake(kPhaseTag + 2);

  std::atomic<bool> stop{false}, abandon{false};
  // the flood: 8-byte active messages to the next rank
  std::thread flooder([&] {
    unsigned char msg[8];
    for (size_t i = 0; i < flood && !abandon.load(); ++i) {
      fill(msg, 8, me, i);
      mp::post_retrying([&] {
        return lci::post_am_x(to, msg, 8, lci::COMP_NULL_RETRY, rcomp).tag(i)();
      });
    }
  });
  // progress, meanwhile
  std::thread progresser([&] {
    while (!stop.load()) lci::progress();
  });
  // an exception below reaches main's report only once both threads are
  // joined (a joinable std::thread's destructor aborts the process)
  struct Joiner {
    std::atomic<bool>& abandon;
    std::atomic<bool>& stop;
    std::thread& a;
    std::thread& b;
    ~Joiner()
    {
      abandon = true;
      stop = true;
      if (a.joinable()) a.join();
      if (b.joinable()) b.join();
    }
  } joiner{abandon, stop, flooder, progresser};

  // send/recv both ways
  lci::comp_t sync = lci::alloc_sync_x().threshold(2)();
  lci::status_t r = lci::post_recv(from, recvbuf.data(), big, kBigSend, sync);
  CHECK(r.is_posted() || big <= lci::get_max_bcopy_size(), "big recv %s",
        r.error.get_str());
  if (r.is_done()) lci::comp_signal(sync, r);
  lci::status_t s = mp::post_retrying(
      [&] { return lci::post_send(to, sendbuf.data(), big, kBigSend, sync); });
  if (s.is_done()) lci::comp_signal(sync, s);
  wait_until([&] { return lci::sync_test(sync, nullptr); }, "big send/recv");
  CHECK(mismatch(recvbuf.data(), big, from, kBigSend) == -1,
        "big send/recv from %d: byte %ld", from,
        mismatch(recvbuf.data(), big, from, kBigSend));
  // put: complete means visible; then tell the target
  s = lci::post_put_x(to, sendbuf.data(), big, lci::COMP_NULL, 0, regions[to])
          .tag(kBigPut)();
  CHECK(s.is_done(), "big put %s", s.error.get_str());
  send_value(to, kPhaseTag + 3, 1);
  recv_value(from, kPhaseTag + 3);
  CHECK(mismatch(region.data(), big, from, kBigSend) == -1,
        "big put from %d: byte %ld", from,
        mismatch(region.data(), big, from, kBigSend));
  // get
  s = lci::post_get(to, getbuf.data(), big, lci::COMP_NULL, 0, sources[to]);
  CHECK(s.is_done(), "big get %s", s.error.get_str());
  CHECK(mismatch(getbuf.data(), big, to, kBigGet) == -1,
        "big get from %d: byte %ld", to,
        mismatch(getbuf.data(), big, to, kBigGet));

  flooder.join();
  wait_until([&] { return g_am_count.load() == static_cast<long>(flood); },
             "the flood");
  stop = true;
  progresser.join();
  for (size_t i = 0; i < flood; ++i)
    CHECK(g_am_seen[i].load() == 1, "active message %zu arrived %d times", i,
          g_am_seen[i].load());
  all_to_all_handshake(kPhaseTag + 4);
  CHECK(g_am_count.load() == static_cast<long>(flood), "extra active messages");
  lci::free_comp(&sync);
  lci::deregister_rcomp(rcomp);
  lci::free_comp(&handler);
  lci::deregister_memory(&rmr_region);
  lci::deregister_memory(&rmr_source);
}

// ---------------------------------------------------------------------------
// Phase 3

void phase_bad_rmr()
{
  const int n = lci::get_rank_n();
  if (n < 2) return;
  std::vector<unsigned char> region(64), buf(64);
  lci::mr_t mr = lci::register_memory(region.data(), region.size());
  std::vector<lci::rmr_t> all = exchange_rmrs(lci::get_rmr(mr), kRmrTag + 4);
  const int other = (g_rank + 1) % n, third = (g_rank + 2) % n;
  // rank other's region used for a put to a third rank (or to ourselves)
  const int wrong = third == other ? g_rank : third;
  std::string msg;
  try {
    lci::post_put(wrong, buf.data(), buf.size(), lci::COMP_NULL, 0, all[other]);
  } catch (const lci::fatal_error& e) {
    msg = e.what();
  }
  CHECK(msg.find("rank " + std::to_string(other)) != std::string::npos,
        "wrong-rank rmr: '%s'", msg.c_str());
  // still works
  lci::status_t s = lci::post_put(other, buf.data(), buf.size(), lci::COMP_NULL,
                                  0, all[other]);
  CHECK(s.is_done(), "put after an error: %s", s.error.get_str());
  all_to_all_handshake(kPhaseTag + 5);
  lci::deregister_memory(&mr);
}

}  // namespace

int main(int argc, char** argv)
{
  size_t big_mib = 64, flood = 20000;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--big-mib")
      big_mib = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--flood")
      flood = std::strtoull(argv[i + 1], nullptr, 10);
  }
  try {
    lci::g_runtime_init();
    g_rank = lci::get_rank_me();
    const size_t inject = lci::get_g_runtime().get_attr_max_inject_size();
    const size_t eager = lci::get_max_bcopy_size();
    phase_rma(
        {0, 1, 8, inject, inject + 1, eager, eager + 1, 64 << 10, 1 << 20});
    phase_big(big_mib << 20, flood);
    phase_bad_rmr();
    std::printf("mp_p2p: rank %d of %d (%s, rdv %s): %s (%d failures)\n",
                g_rank, lci::get_rank_n(),
                lci::get_g_runtime().get_attr_ofi_provider_name().c_str(),
                lci::get_attr_rdv_protocol_str(
                    lci::get_g_runtime().get_attr_rdv_protocol()),
                g_failures ? "FAILED" : "ok", g_failures.load());
    lci::g_runtime_fina();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mp_p2p: rank %d: %s\n", g_rank, e.what());
    return 1;
  }
  return g_failures ? 1 : 0;
}
