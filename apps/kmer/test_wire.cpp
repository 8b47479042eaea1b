// The wire format of k-mers (kmer_common.hpp): for every k, put_kmer writes
// exactly wire_bytes(k) little-endian bytes and nothing around them, and
// get_kmer reads the k-mer back.
#include <cstdio>
#include <random>

#include "kmer_common.hpp"

int main()
{
  using namespace kmer;
  std::mt19937_64 rng(12345);
  int bad = 0;
  for (int k = 1; k <= kMaxK; ++k) {
    const int bytes = wire_bytes(k);
    const u128 mask = (u128(1) << (2 * k)) - 1;
    for (int it = 0; it < 2000; ++it) {
      const u128 v = ((u128(rng()) << 64) | rng()) & mask;
      uint8_t buf[40];
      for (uint8_t& c : buf) c = 0xa5;
      const int at = 1 + it % 8;  // any alignment
      put_kmer(buf + at, v, bytes);
      bool ok = get_kmer(buf + at, bytes) == v;
      for (int i = 0; i < 40; ++i) {
        const int j = i - at;
        const uint8_t want =
            j >= 0 && j < bytes ? static_cast<uint8_t>(v >> (8 * j)) : 0xa5;
        ok = ok && buf[i] == want;
      }
      if (!ok && ++bad <= 5)
        std::fprintf(stderr, "test_wire: k=%d (%d bytes) wrong\n", k, bytes);
    }
  }
  std::printf("test_wire: %s\n", bad ? "FAILED" : "ok");
  return bad ? 1 : 0;
}
