// Point-to-point all-to-all among every rank (the oversubscription case:
// run with 32 ranks on 2 cores). Each round, every rank
//  1. posts receives for, and sends to every other rank, three messages: 8
//     bytes, the eager limit, and a rendezvous one (above it, on odd rounds
//     only), all signalling one synchronizer (allow_done(false)) that the
//     rank waits on with sync_wait;
//  2. sends one active message to every other rank and pops its own n - 1
//     from a completion queue in its own lci::progress() loop.
// Every byte, source, tag and count is checked. Ranks that wait hold no
// core for long: progress yields when idle (src/util/idle.hpp), so with
// more ranks than cores this finishes in seconds, not in minutes.
// Usage: lcrun -n N mp_alltoall [--rounds R]; exit status 0 on success.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <lci.hpp>
#include <string>
#include <vector>

#include "mp_check.hpp"

namespace
{

using mp::g_failures;
using mp::g_rank;

unsigned char pattern(int src, int dst, int round, int j, size_t i)
{
  uint64_t x = (uint64_t(src) << 48) ^ (uint64_t(dst) << 32) ^
               (uint64_t(round) << 20) ^ (uint64_t(j) << 16) ^ i;
  x *= 0x9E3779B97F4A7C15ull;
  return static_cast<unsigned char>(x >> 56);
}

void fill(std::vector<unsigned char>& b, int src, int dst, int round, int j)
{
  for (size_t i = 0; i < b.size(); ++i) b[i] = pattern(src, dst, round, j, i);
}

long mismatch(const void* p, size_t n, int src, int dst, int round, int j)
{
  auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i)
    if (b[i] != pattern(src, dst, round, j, i)) return static_cast<long>(i);
  return -1;
}

}  // namespace

int main(int argc, char** argv)
{
  int rounds = 4;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--rounds" && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: mp_alltoall [--rounds R]\n");
      return 2;
    }
  }
  try {
    lci::g_runtime_init();
    const int me = lci::get_rank_me(), n = lci::get_rank_n();
    g_rank = me;
    const size_t eager = lci::get_max_bcopy_size();
    const size_t sizes[3] = {8, eager, eager + 4096};
    lci::comp_t cq = lci::alloc_cq();
    lci::rcomp_t rc = lci::register_rcomp(cq);
    lci::barrier();  // every rank registered its rcomp
    long nmsgs = 0;
    for (int round = 0; round < rounds; ++round) {
      // 1. send/recv, three sizes (the rendezvous one on odd rounds)
      const int kinds = round % 2 ? 3 : 2;
      const int nops = 2 * kinds * (n - 1);
      lci::comp_t sync = lci::alloc_sync_x().threshold(nops)();
      std::vector<std::vector<unsigned char>> out, in;
      std::vector<int> in_src, in_kind;
      out.reserve(static_cast<size_t>(n * kinds));
      in.reserve(static_cast<size_t>(n * kinds));
      for (int d = 1; d < n; ++d) {
        const int p = (me + d) % n;
        for (int j = 0; j < kinds; ++j) {
          in.emplace_back(sizes[j], 0);
          in_src.push_back(p);
          in_kind.push_back(j);
          lci::status_t s = lci::post_recv_x(p, in.back().data(), sizes[j],
                                             static_cast<lci::tag_t>(j), sync)
                                .allow_done(false)();
          CHECK(s.is_posted(), "receive %d from %d: not posted", j, p);
        }
      }
      for (int d = 1; d < n; ++d) {
        const int p = (me + d) % n;
        for (int j = 0; j < kinds; ++j) {
          out.emplace_back(sizes[j]);
          fill(out.back(), me, p, round, j);
          lci::status_t s = lci::post_send_x(p, out.back().data(), sizes[j],
                                             static_cast<lci::tag_t>(j), sync)
                                .allow_done(false)
                                .allow_retry(false)();
          CHECK(s.is_posted(), "send %d to %d: not posted", j, p);
        }
      }
      std::vector<lci::status_t> st(static_cast<size_t>(nops));
      lci::sync_wait(sync, st.data());
      int nrecv = 0;
      for (const lci::status_t& s : st) {
        CHECK(s.is_done(), "round %d: a failed operation: %s", round,
              s.error.get_str());
        if (s.buffer && s.rank != me) {
          for (size_t k = 0; k < in.size(); ++k) {
            if (in[k].data() != s.buffer) continue;
            ++nrecv;
            CHECK(s.rank == in_src[k], "round %d: from %d, expected %d", round,
                  s.rank, in_src[k]);
            CHECK(s.size == sizes[in_kind[k]], "round %d: %zu bytes", round,
                  s.size);
          }
        }
      }
      CHECK(nrecv == kinds * (n - 1), "round %d: %d receive completions", round,
            nrecv);
      for (size_t k = 0; k < in.size(); ++k) {
        long bad = mismatch(in[k].data(), in[k].size(), in_src[k], me, round,
                            in_kind[k]);
        CHECK(bad < 0, "round %d: message %d from %d: byte %ld wrong", round,
              in_kind[k], in_src[k], bad);
      }
      nmsgs += kinds * (n - 1);
      lci::free_comp(&sync);

      // 2. an active message to every other rank, popped in our own loop
      std::vector<unsigned char> am(64);
      for (int d = 1; d < n; ++d) {
        const int p = (me + d) % n;
        fill(am, me, p, round, 7);
        for (;;) {
          lci::status_t s =
              lci::post_am_x(p, am.data(), am.size(), lci::COMP_NULL_RETRY, rc)
                  .tag(static_cast<lci::tag_t>(round))();
          if (!s.is_retry()) break;
          lci::progress();
        }
      }
      std::vector<int> seen(static_cast<size_t>(n), 0);
      for (int got = 0; got < n - 1;) {
        lci::status_t s = lci::cq_pop(cq);
        if (s.is_retry()) {
          lci::progress();
          continue;
        }
        ++got;
        CHECK(s.rank >= 0 && s.rank < n && s.rank != me, "am from rank %d",
              s.rank);
        CHECK(s.tag == static_cast<lci::tag_t>(round), "am tag %llu, round %d",
              static_cast<unsigned long long>(s.tag), round);
        if (s.rank >= 0 && s.rank < n) {
          ++seen[static_cast<size_t>(s.rank)];
          CHECK(s.size == am.size() &&
                    mismatch(s.buffer, s.size, s.rank, me, round, 7) < 0,
                "round %d: am from %d: wrong content", round, s.rank);
        }
        std::free(s.buffer);
      }
      for (int p = 0; p < n; ++p)
        CHECK(seen[static_cast<size_t>(p)] == (p == me ? 0 : 1),
              "round %d: %d active messages from %d", round,
              seen[static_cast<size_t>(p)], p);
      nmsgs += n - 1;
    }
    lci::barrier();
    CHECK(lci::cq_pop(cq).is_retry(), "completion queue not empty at the end");
    lci::deregister_rcomp(rc);
    lci::free_comp(&cq);
    lci::g_runtime_fina();
    if (me == 0)
      std::printf(
          "mp_alltoall: %d ranks, %d rounds, %ld messages received "
          "per rank: %s\n",
          n, rounds, nmsgs, g_failures.load() ? "FAILED" : "ok");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", g_rank, e.what());
    return 1;
  }
  return g_failures.load() ? 1 : 0;
}
