// Collectives mixed with point-to-point traffic on one device, checked
// against a serial computation: a seeded sequence (the same on every rank)
// of every collective, with sizes from 0 bytes to several chunks of the
// node-local team's slots, item sizes 1, 8 and 24 bytes (bytes added
// modulo 256, 64-bit words added), every root, in-place forms, blocking
// and nonblocking (up to 3 in flight, waited in order), while each rank
// has a send to its right neighbour and a receive from its left one in
// flight on the same device (eager and rendezvous sizes, every byte
// checked). Guard bytes after every output must stay untouched.
//
//   mp_coll_mixed [--ops N] [--seed S] [--expect-team yes|no|hier]
//                 [--progress-thread 1]
// --expect-team: whether the runtime must (yes) or must not (no) have the
// node-local shared-memory team (coll/shm_team.hpp), read from its
// internals, or must have its hierarchical form (hier: the ranks span
// nodes) and run collectives through it. --progress-thread 1: a second thread
// calls lci::progress all along, so collectives start on one thread and advance
// and complete on either. Exit status 0 on success. Run with lcrun -n N (any N
// >= 1).
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <lci.hpp>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "coll/shm_team.hpp"
#include "mp_check.hpp"
#include "resource/runtime.hpp"

namespace
{

using mp::g_rank;

// memcpy of n bytes, none from an empty vector's null data()
void copy(void* dst, const void* src, size_t n)
{
  if (n) std::memcpy(dst, src, n);
}

int g_n = 1;
constexpr unsigned char kGuard = 0xa5;
constexpr size_t kGuardBytes = 32;

unsigned char byte_of(int r, size_t i, unsigned k)
{
  return static_cast<unsigned char>(r * 131 + i * 7 + k * 29 + 3 +
                                    (i >> 9) * 11);
}

using mp::add_bytes;

// items of one word, or of three
void add_words(const void* l, const void* r, void* d, size_t nwords)
{
  uint64_t a, b;
  for (size_t i = 0; i < nwords; ++i) {
    std::memcpy(&a, static_cast<const char*>(l) + 8 * i, 8);
    std::memcpy(&b, static_cast<const char*>(r) + 8 * i, 8);
    a += b;
    std::memcpy(static_cast<char*>(d) + 8 * i, &a, 8);
  }
}
void add_words1(const void* l, const void* r, void* d, size_t n)
{
  add_words(l, r, d, n);
}
void add_words3(const void* l, const void* r, void* d, size_t n)
{
  add_words(l, r, d, 3 * n);
}

// rank r's `bytes` bytes of collective k, from offset `base` of its input
std::vector<unsigned char> input_of(int r, size_t bytes, unsigned k,
                                    size_t base = 0)
{
  std::vector<unsigned char> v(bytes);
  for (size_t i = 0; i < bytes; ++i) v[i] = byte_of(r, base + i, k);
  return v;
}

// the reduction over every rank of `bytes` bytes at offset `base`
std::vector<unsigned char> sum_of(size_t bytes, size_t item, unsigned k,
                                  size_t base)
{
  std::vector<unsigned char> acc = input_of(0, bytes, k, base);
  for (int r = 1; r < g_n; ++r) {
    std::vector<unsigned char> x = input_of(r, bytes, k, base);
    if (item == 1)
      add_bytes(acc.data(), x.data(), acc.data(), bytes);
    else
      add_words(acc.data(), x.data(), acc.data(), bytes / 8);
  }
  return acc;
}

enum kind_t { kBarrier, kBcast, kReduce, kAllreduce, kRS, kAllgather, kA2A };
const char* const kNames[] = {"barrier",   "broadcast",      "reduce",
                              "allreduce", "reduce_scatter", "allgather",
                              "alltoall"};

// one collective: its buffers, what it must produce, its completion
struct op_t {
  unsigned k = 0;
  kind_t kind = kBarrier;
  size_t count = 0, item = 1, size = 0;
  int root = 0;
  bool in_place = false;
  std::vector<unsigned char> in, out;  // out: result + guard
  size_t out_bytes = 0;                // checked part of out
  unsigned char* out_at = nullptr;     // where the result lands
  std::vector<unsigned char> want;
  bool check_out = true;
  lci::comp_t sync;
  bool nonblocking = false;
};

lci::reduce_op_t op_for(size_t item)
{
  return item == 1 ? &add_bytes : item == 8 ? &add_words1 : &add_words3;
}

void start(op_t& o)
{
  const int me = g_rank, n = g_n;
  lci::comp_t comp = o.nonblocking ? o.sync : lci::COMP_NULL;
  size_t bytes = o.count * o.item;
  switch (o.kind) {
    case kBarrier:
      o.check_out = false;
      lci::barrier_x().comp(comp)();
      return;
    case kBcast:
      o.out.assign(o.size + kGuardBytes, kGuard);
      if (me == o.root) {
        std::vector<unsigned char> v = input_of(o.root, o.size, o.k);
        copy(o.out.data(), v.data(), o.size);
      }
      o.want = input_of(o.root, o.size, o.k);
      o.out_at = o.out.data();
      o.out_bytes = o.size;
      lci::broadcast_x(o.out.data(), o.size, o.root).comp(comp)();
      return;
    case kReduce:
    case kAllreduce: {
      o.in = input_of(me, bytes, o.k);
      o.out.assign(bytes + kGuardBytes, kGuard);
      if (o.in_place) {
        copy(o.out.data(), o.in.data(), bytes);
        o.in.clear();
      }
      const void* src = o.in_place ? o.out.data() : o.in.data();
      o.out_at = o.out.data();
      o.out_bytes = bytes;
      if (o.kind == kReduce) {
        o.check_out = me == o.root;
        o.want = sum_of(bytes, o.item, o.k, 0);
        lci::reduce_x(src, o.out.data(), o.count, o.item, op_for(o.item),
                      o.root)
            .comp(comp)();
      } else {
        o.want = sum_of(bytes, o.item, o.k, 0);
        lci::allreduce_x(src, o.out.data(), o.count, o.item, op_for(o.item))
            .comp(comp)();
      }
      return;
    }
    case kRS: {
      // in place: the output is this rank's block of the input
      o.in = input_of(me, bytes * n, o.k);
      o.in.resize(bytes * n + kGuardBytes, kGuard);
      o.out.assign(bytes + kGuardBytes, kGuard);
      o.out_at = o.in_place ? o.in.data() + me * bytes : o.out.data();
      o.out_bytes = bytes;
      o.want = sum_of(bytes, o.item, o.k, me * bytes);
      lci::reduce_scatter_x(o.in.data(), o.out_at, o.count, o.item,
                            op_for(o.item))
          .comp(comp)();
      return;
    }
    case kAllgather: {
      o.out.assign(o.size * n + kGuardBytes, kGuard);
      std::vector<unsigned char> mine = input_of(me, o.size, o.k);
      const void* src = mine.data();
      if (o.in_place) {
        copy(o.out.data() + me * o.size, mine.data(), o.size);
        src = o.out.data() + me * o.size;
      } else {
        o.in = mine;
        src = o.in.data();
      }
      for (int r = 0; r < n; ++r) {
        std::vector<unsigned char> v = input_of(r, o.size, o.k);
        o.want.insert(o.want.end(), v.begin(), v.end());
      }
      o.out_at = o.out.data();
      o.out_bytes = o.size * n;
      lci::allgather_x(src, o.out.data(), o.size).comp(comp)();
      return;
    }
    case kA2A: {
      o.out.assign(o.size * n + kGuardBytes, kGuard);
      std::vector<unsigned char> mine = input_of(me, o.size * n, o.k);
      const void* src;
      if (o.in_place) {
        copy(o.out.data(), mine.data(), o.size * n);
        src = o.out.data();
      } else {
        o.in = mine;
        src = o.in.data();
      }
      for (int r = 0; r < n; ++r) {
        std::vector<unsigned char> v = input_of(r, o.size, o.k, me * o.size);
        o.want.insert(o.want.end(), v.begin(), v.end());
      }
      o.out_at = o.out.data();
      o.out_bytes = o.size * n;
      lci::alltoall_x(src, o.out.data(), o.size).comp(comp)();
      return;
    }
  }
}

void verify(op_t& o)
{
  if (o.nonblocking) {
    lci::status_t s;
    while (!lci::sync_test(o.sync, &s)) lci::progress();
    CHECK(s.is_done(), "%s #%u: status %s", kNames[o.kind], o.k,
          s.error.get_str());
    lci::free_comp(&o.sync);
  }
  if (!o.check_out) return;
  size_t bad = 0;
  for (size_t i = 0; i < o.out_bytes; ++i)
    if (o.out_at[i] != o.want[i] && bad++ < 3)
      CHECK(false,
            "%s #%u (count %zu item %zu size %zu root %d%s): byte %zu "
            "is %u, expected %u",
            kNames[o.kind], o.k, o.count, o.item, o.size, o.root,
            o.in_place ? ", in place" : "", i, o.out_at[i], o.want[i]);
  // the guard after the whole output buffer
  const std::vector<unsigned char>& buf =
      o.kind == kRS && o.in_place ? o.in : o.out;
  for (size_t i = buf.size() - kGuardBytes; i < buf.size(); ++i)
    CHECK(buf[i] == kGuard, "%s #%u: guard byte %zu written", kNames[o.kind],
          o.k, i);
}

// the point-to-point message of iteration k from rank `src`
size_t p2p_size(unsigned k) { return k % 5 == 0 ? 40000 : 8 + k % 64; }

}  // namespace

int main(int argc, char** argv)
{
  unsigned nops = 150, seed = 7;
  std::string expect_team;
  bool progress_thread = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--ops")
      nops = static_cast<unsigned>(std::atoi(argv[i + 1]));
    else if (a == "--seed")
      seed = static_cast<unsigned>(std::atoi(argv[i + 1]));
    else if (a == "--expect-team")
      expect_team = argv[i + 1];
    else if (a == "--progress-thread")
      progress_thread = std::atoi(argv[i + 1]) != 0;
  }
  try {
    lci::g_runtime_init();
    g_rank = lci::get_rank_me();
    g_n = lci::get_rank_n();
    const int me = g_rank, n = g_n;
    auto* team = static_cast<lci::coll::shm_team_t*>(
        lci::get_g_runtime().p_impl->coll_team.get());
    if (!expect_team.empty()) {
      bool has = team != nullptr;
      CHECK(has == (expect_team != "no"), "the runtime %s the node-local team",
            has ? "has" : "lacks");
      if (team)
        CHECK(team->hierarchical() == (expect_team == "hier"),
              "the team is %shierarchical", team->hierarchical() ? "" : "not ");
    }
    std::atomic<bool> stop{false};
    std::thread poller;
    if (progress_thread)
      poller = std::thread([&stop] {
        while (!stop.load(std::memory_order_relaxed)) lci::progress();
      });
    std::mt19937 rng(seed);  // the same sequence on every rank
    const size_t sizes[] = {0, 1, 8, 24, 1000, 4104, 65552, 150000};
    std::deque<std::unique_ptr<op_t>> window;
    const int right = (me + 1) % n, left = (me + n - 1) % n;
    for (unsigned k = 1; k <= nops; ++k) {
      // point-to-point traffic in flight during the collective
      std::vector<unsigned char> sbuf, rbuf;
      lci::comp_t ssync, rsync;
      // a post that completes at once does not signal its completion
      bool recv_done = false, send_done = false;
      if (n > 1) {
        sbuf = input_of(me + 100, p2p_size(k), k);
        rbuf.assign(p2p_size(k), 0);
        ssync = lci::alloc_sync();
        rsync = lci::alloc_sync();
        lci::status_t st;
        do {
          st = lci::post_recv_x(left, rbuf.data(), rbuf.size(), k, rsync)();
          if (st.is_retry()) lci::progress();
        } while (st.is_retry());
        recv_done = st.is_done();
        do {
          st = lci::post_send_x(right, sbuf.data(), sbuf.size(), k, ssync)();
          if (st.is_retry()) lci::progress();
        } while (st.is_retry());
        send_done = st.is_done();
      }
      auto o = std::make_unique<op_t>();
      o->k = k;
      o->kind = static_cast<kind_t>(rng() % 7);
      size_t sz = sizes[rng() % 8];
      // the largest only now and then: 8 ranks on 2 cores
      if (sz == 150000 && rng() % 3 != 0) sz = 4104;
      o->item = std::vector<size_t>{1, 8, 24}[rng() % 3];
      o->count = sz / o->item;
      o->size = sz;
      if (o->kind == kA2A || o->kind == kRS) {
        o->size = sz / static_cast<size_t>(n) + (sz ? 1 : 0);
        o->count = o->size / o->item;
      }
      o->root = static_cast<int>(rng() % static_cast<unsigned>(n));
      o->in_place = rng() % 3 == 0;
      o->nonblocking = rng() % 2 == 0;
      if (o->nonblocking) o->sync = lci::alloc_sync();
      start(*o);
      if (o->nonblocking) {
        window.push_back(std::move(o));
        if (window.size() > 3) {
          verify(*window.front());
          window.pop_front();
        }
      } else {
        verify(*o);
      }
      if (n > 1) {
        lci::status_t st;
        if (!recv_done) {
          while (!lci::sync_test(rsync, &st)) lci::progress();
          CHECK(st.is_done() && st.size == rbuf.size(), "p2p #%u: %s size %zu",
                k, st.error.get_str(), st.size);
        }
        CHECK(rbuf == input_of(left + 100, p2p_size(k), k),
              "p2p #%u: wrong bytes", k);
        if (!send_done)
          while (!lci::sync_test(ssync, &st)) lci::progress();
        lci::free_comp(&ssync);
        lci::free_comp(&rsync);
      }
    }
    while (!window.empty()) {
      verify(*window.front());
      window.pop_front();
    }
    stop.store(true);
    if (poller.joinable()) poller.join();
    lci::barrier();
    if (expect_team == "hier" && team) {
      CHECK(team->hierarchical_runs() > 0, "no hierarchical collective ran");
      std::printf(
          "mp_coll_mixed: rank %d: %llu hierarchical collectives "
          "(node of %zu ranks)\n",
          g_rank, static_cast<unsigned long long>(team->hierarchical_runs()),
          team->members().size());
    }
    lci::g_runtime_fina();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", g_rank, e.what());
    return 1;
  }
  if (mp::g_failures) {
    std::fprintf(stderr, "rank %d: %d failures\n", g_rank,
                 mp::g_failures.load());
    return 1;
  }
  std::printf("mp_coll_mixed: rank %d of %d: ok, %u collectives\n", g_rank, g_n,
              nops);
  return 0;
}
