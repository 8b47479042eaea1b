// The cost of one copy in isolation, by distance between destination and
// source modulo 4 KiB: memcpy against util::copy_large (what the shm rings
// and the node-local collectives copy with) and util::copy_bytes (the
// message copies of the point-to-point paths). Hot buffers in one thread,
// no communication: each figure is the fewest time-stamp counter ticks per
// copy over --trials trials of --reps copies, a minimum that other load on
// the machine can only raise, so the ratios between distances hold on a
// loaded machine. Not the CSV rows of the other programs: one line per
// (size, distance).
#include <x86intrin.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "util/copy.hpp"

namespace
{

using copy_fn = void (*)(void*, const void*, size_t);

[[gnu::noinline]] void by_memcpy(void* d, const void* s, size_t n)
{
  std::memcpy(d, s, n);
}
[[gnu::noinline]] void by_copy_large(void* d, const void* s, size_t n)
{
  lci::util::copy_large(d, s, n);
}
[[gnu::noinline]] void by_copy_bytes(void* d, const void* s, size_t n)
{
  lci::util::copy_bytes(d, s, n);
}

uint64_t fewest_ticks(copy_fn f, void* d, const void* s, size_t n, int trials,
                      int reps)
{
  uint64_t best = UINT64_MAX;
  for (int t = 0; t < trials; ++t) {
    const uint64_t t0 = __rdtsc();
    for (int k = 0; k < reps; ++k) f(d, s, n);
    best = std::min<uint64_t>(best, (__rdtsc() - t0) / reps);
  }
  return best;
}

void usage()
{
  std::printf(
      "usage: lci_copy_gaps [--trials N] [--reps N]\n\n"
      "Time-stamp counter ticks per copy (fewest over N trials) of memcpy,\n"
      "lci::util::copy_large and copy_bytes, for sizes 1 KiB..64 KiB and\n"
      "distances (destination - source) mod 4096 of 0..4095; the source is\n"
      "16 bytes past a page, like a large malloc block.\n\n"
      "options:\n"
      "  --trials N   trials per figure (default 100)\n"
      "  --reps N     copies per trial (default 32)\n"
      "  --help       print this help and exit\n");
}

}  // namespace

int main(int argc, char** argv)
{
  int trials = 100, reps = 32;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help") {
      usage();
      return 0;
    }
    if ((a == "--trials" || a == "--reps") && i + 1 < argc) {
      const int v = std::atoi(argv[++i]);
      if (v <= 0) {
        std::fprintf(stderr, "lci_copy_gaps: %s needs a positive number\n",
                     a.c_str());
        return 2;
      }
      (a == "--trials" ? trials : reps) = v;
      continue;
    }
    std::fprintf(stderr, "lci_copy_gaps: unknown option '%s'\n", a.c_str());
    usage();
    return 2;
  }
  constexpr size_t kArea = size_t(1) << 20;
  auto* src_area = static_cast<unsigned char*>(std::aligned_alloc(4096, kArea));
  auto* dst_area = static_cast<unsigned char*>(std::aligned_alloc(4096, kArea));
  if (!src_area || !dst_area) {
    std::fprintf(stderr, "lci_copy_gaps: out of memory\n");
    return 1;
  }
  std::memset(src_area, 1, kArea);
  std::memset(dst_area, 2, kArea);
  const size_t sizes[] = {1024, 2048, 4096, 8192, 16384, 65536};
  const size_t gaps[] = {0, 8, 16, 24, 31, 32, 48, 56, 63, 64, 128, 2048, 4088};
  std::printf("size,gap,memcpy,copy_large,copy_bytes,memcpy/copy_large\n");
  for (size_t n : sizes)
    for (size_t gap : gaps) {
      const unsigned char* s = src_area + 16;
      unsigned char* d = dst_area + 4096 + (16 + gap) % 4096;
      const uint64_t m = fewest_ticks(by_memcpy, d, s, n, trials, reps);
      const uint64_t l = fewest_ticks(by_copy_large, d, s, n, trials, reps);
      const uint64_t b = fewest_ticks(by_copy_bytes, d, s, n, trials, reps);
      std::printf("%zu,%zu,%lu,%lu,%lu,%.2f\n", n, gap,
                  static_cast<unsigned long>(m), static_cast<unsigned long>(l),
                  static_cast<unsigned long>(b),
                  l ? static_cast<double>(m) / static_cast<double>(l) : 0.0);
    }
  std::free(src_area);
  std::free(dst_area);
  return 0;
}
