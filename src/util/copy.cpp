#include "util/copy.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace lci::util
{
namespace
{

#if defined(__x86_64__)
[[gnu::target("avx2")]] void copy_backward_avx2(unsigned char* d,
                                                const unsigned char* s,
                                                size_t n)
{
  if (n < 128) {
    std::memcpy(d, s, n);
    return;
  }
  // the last 32 bytes first, so that the stores below are aligned (a
  // 32-byte store across two cache lines costs two): the loop then starts
  // at the last 32-byte boundary of the destination and may write some of
  // these bytes again, with the same values
  _mm256_storeu_si256(
      reinterpret_cast<__m256i*>(d + n - 32),
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + n - 32)));
  size_t i = n - ((reinterpret_cast<uintptr_t>(d) + n) & 31);
  for (; i >= 128; i -= 128) {
    // four loads, then four stores: the loads never wait on each other
    const __m256i a =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i - 32));
    const __m256i b =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i - 64));
    const __m256i c =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i - 96));
    const __m256i e =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i - 128));
    _mm256_store_si256(reinterpret_cast<__m256i*>(d + i - 32), a);
    _mm256_store_si256(reinterpret_cast<__m256i*>(d + i - 64), b);
    _mm256_store_si256(reinterpret_cast<__m256i*>(d + i - 96), c);
    _mm256_store_si256(reinterpret_cast<__m256i*>(d + i - 128), e);
  }
  // the first i < 128 bytes: one short copy, no loop for aliasing to slow
  if (i) std::memcpy(d, s, i);
}

bool cpu_has_avx2()
{
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
}
#endif

void copy_backward_64(unsigned char* d, const unsigned char* s, size_t n)
{
  size_t i = n;
  for (; i >= 64; i -= 64) {
    unsigned char x[64];
    std::memcpy(x, s + i - 64, 64);
    std::memcpy(d + i - 64, x, 64);
  }
  if (i) std::memcpy(d, s, i);
}

}  // namespace

void copy_backward(void* dst, const void* src, size_t n)
{
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
#if defined(__x86_64__)
  static const bool avx2 = cpu_has_avx2();
  if (avx2) {
    copy_backward_avx2(d, s, n);
    return;
  }
#endif
  copy_backward_64(d, s, n);
}

}  // namespace lci::util
