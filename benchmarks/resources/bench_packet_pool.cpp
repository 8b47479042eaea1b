// Packet-pool throughput (paper 4.1.2, Figure 5 style): each thread gets a
// packet and puts it back, on one pool shared by all threads (the default
// 4,096 packets of 8 KiB). One op = one get+put pair.
//
//   dedicated  get then put at once: every thread works on its own deque
//              after its first steal
//   burst16    16 gets then 16 puts: deeper in the deque, same ownership
//
// A get that returns nullptr counts as a failure (none is expected: the
// pool has more packets than the threads hold at once).
//
// Usage: bench_packet_pool [--threads 1,2,4,8] [--ops N] [--runs 5]
#include <cstdio>

#include "harness.hpp"
#include "resource/packet_pool.hpp"

int main(int argc, char** argv)
{
  bench::options_t o = bench::parse(argc, argv, "packet pool get+put pairs");
  bench::print_header();
  lci::packet_pool_attr_t attr;
  attr.packet_size = 8192;
  attr.npackets = 4096;
  using pool_t = lci::packet_pool_impl_t;
  long failures = 0;
  for (int n : o.threads) {
    pool_t pool(attr);
    auto mops = bench::measure(o, n, [&](int, long ops) {
      long bad = 0;
      for (long i = 0; i < ops; ++i) {
        lci::packet_t* p = pool.get();
        if (!p) {
          ++bad;
          continue;
        }
        pool_t::put(p);
      }
      if (bad) __atomic_add_fetch(&failures, bad, __ATOMIC_RELAXED);
    });
    bench::report("packet_pool", "dedicated", n, o.ops, mops);
  }
  for (int n : o.threads) {
    pool_t pool(attr);
    auto mops = bench::measure(o, n, [&](int, long ops) {
      long bad = 0;
      lci::packet_t* held[16];
      for (long i = 0; i + 16 <= ops; i += 16) {
        int k = 0;
        for (int j = 0; j < 16; ++j)
          if ((held[k] = pool.get())) ++k;
        bad += 16 - k;
        for (int j = 0; j < k; ++j) pool_t::put(held[j]);
      }
      if (bad) __atomic_add_fetch(&failures, bad, __ATOMIC_RELAXED);
    });
    bench::report("packet_pool", "burst16", n, o.ops, mops);
  }
  if (failures) {
    std::fprintf(stderr, "bench_packet_pool: %ld gets returned nullptr\n",
                 failures);
    return 1;
  }
  return 0;
}
