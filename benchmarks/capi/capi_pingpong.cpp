// The 8-byte active-message ping-pong through the C interface (lci.h,
// pingpong_c.c) against the same loop through the C++ interface, in one
// run: rounds alternate C++ and C so that both see the same machine state
// (C++ first in even rounds, C first in odd ones).
// Each round is `--iters` round trips between rank 0 and rank 1 (one rank:
// with itself through loopback; ranks above 1 wait). Rank 0 prints one row
// per round and a summary: the median rate of each interface and their
// ratio (C / C++).
//
//   lcrun -n 2 ./capi_pingpong [--rounds 10] [--iters 100000] [--warmup 1000]
//
// Measures on a quiet machine only (docs/BENCHMARKING.md).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <lci.hpp>
#include <string>
#include <vector>

#include "pingpong_c.h"

namespace
{

lci::comp_t g_cq;
lci::rcomp_t g_rcomp;

void send8(int peer, uint64_t* v)
{
  lci::status_t s;
  while (
      (s = lci::post_am(peer, v, 8, lci::COMP_NULL_RETRY, g_rcomp)).is_retry())
    lci::progress();
}

uint64_t recv8(lci::allocator_base_t* allocator)
{
  lci::status_t s;
  while ((s = lci::cq_pop(g_cq)).is_retry()) lci::progress();
  uint64_t v;
  std::memcpy(&v, s.buffer, 8);
  allocator->deallocate(s.buffer);
  return v;
}

uint64_t pingpong_cxx(long iters, int peer, bool initiator)
{
  lci::allocator_base_t* allocator = lci::get_allocator();
  uint64_t sum = 0;
  for (long i = 0; i < iters; ++i) {
    uint64_t v = static_cast<uint64_t>(i);
    if (initiator) {
      send8(peer, &v);
      sum += recv8(allocator);
    } else {
      v = recv8(allocator);
      sum += v;
      send8(peer, &v);
    }
  }
  return sum;
}

void usage(FILE* f)
{
  std::fprintf(f,
               "usage: capi_pingpong [--rounds N] [--iters N] [--warmup N]\n"
               "8-byte active-message ping-pong, C interface vs C++ "
               "interface,\nalternated rounds (run with lcrun -n 2).\n");
}

double median(std::vector<double> v)
{
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv)
{
  long rounds = 10, iters = 100000, warmup = 1000;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      usage(stdout);
      return 0;
    }
    if (i + 1 < argc &&
        (a == "--rounds" || a == "--iters" || a == "--warmup")) {
      const long v = std::atol(argv[++i]);
      (a == "--rounds" ? rounds : a == "--iters" ? iters : warmup) = v;
      continue;
    }
    std::fprintf(stderr, "capi_pingpong: unknown option %s\n", a.c_str());
    usage(stderr);
    return 2;
  }
  if (rounds < 1 || iters < 1 || warmup < 0) {
    usage(stderr);
    return 2;
  }
  lci::g_runtime_init();
  const int rank = lci::get_rank_me();
  const int nranks = lci::get_rank_n();
  g_cq = lci::alloc_cq();
  g_rcomp = lci::register_rcomp(g_cq);
  capi_pingpong_c_setup();
  const bool playing = rank < 2;
  const int peer = nranks == 1 ? 0 : 1 - rank;
  const bool initiator = rank == 0;
  // the sum of 0..n-1 received by the initiator and by the responder alike
  auto expect = [](long n) {
    return static_cast<uint64_t>(n) * static_cast<uint64_t>(n - 1) / 2;
  };
  if (playing) {
    pingpong_cxx(warmup, peer, initiator);
    capi_pingpong_c(warmup, peer, initiator ? 1 : 0);
  }
  if (rank == 0)
    std::printf("# round  api  iters  seconds  round_trips_per_s\n");
  std::vector<double> rate_cxx, rate_c;
  bool ok = true;
  for (long r = 0; r < rounds; ++r) {
    // odd rounds run C first: neither interface always follows the other
    for (int k = 0; k < 2; ++k) {
      const int api = (k + static_cast<int>(r)) % 2;
      lci::barrier();
      const auto t0 = std::chrono::steady_clock::now();
      uint64_t sum = 0;
      if (playing)
        sum = api == 0 ? pingpong_cxx(iters, peer, initiator)
                       : capi_pingpong_c(iters, peer, initiator ? 1 : 0);
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
              .count();
      if (playing && sum != expect(iters)) ok = false;
      (api == 0 ? rate_cxx : rate_c).push_back(iters / s);
      if (rank == 0)
        std::printf("%ld  %s  %ld  %.6f  %.0f\n", r, api == 0 ? "cxx" : "c",
                    iters, s, iters / s);
    }
  }
  if (rank == 0) {
    const double mc = median(rate_c), mx = median(rate_cxx);
    std::printf("# median round trips/s: cxx %.0f  c %.0f  c/cxx %.4f\n", mx,
                mc, mx > 0 ? mc / mx : 0.0);
  }
  lci::barrier();
  capi_pingpong_c_teardown();
  lci::deregister_rcomp(g_rcomp);
  lci::free_comp(&g_cq);
  lci::g_runtime_fina();
  if (!ok) {
    std::fprintf(stderr, "capi_pingpong: rank %d: wrong values received\n",
                 rank);
    return 1;
  }
  return 0;
}
