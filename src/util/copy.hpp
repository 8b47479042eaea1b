// copy_small: a copy of at most 32 bytes without a call to memcpy, and
// copy_bytes, which uses it up to 32 bytes: for the hot paths that move a
// small message (the shm ring's push, an eager payload into its buffer).
// copy_large: a copy of buffers of kilobytes whose addresses the caller
// does not choose (a user buffer and a page-aligned shared slot).
// Thread safety: pure functions.
#ifndef LCI_UTIL_COPY_HPP
#define LCI_UTIL_COPY_HPP

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace lci::util
{

// n (W to 2W) bytes as two overlapping moves of W bytes, both loads first
template <size_t W>
inline void copy_two(unsigned char* dst, const unsigned char* src, size_t n)
{
  unsigned char x[W], y[W];
  std::memcpy(x, src, W);
  std::memcpy(y, src + n - W, W);
  std::memcpy(dst, x, W);
  std::memcpy(dst + n - W, y, W);
}

// Copies n <= 32 bytes without a call: two overlapping moves of the
// largest power of two not above n (never a byte outside [src, src + n)).
inline void copy_small(unsigned char* dst, const void* src, size_t n)
{
  const auto* s = static_cast<const unsigned char*>(src);
  if (n >= 16)
    copy_two<16>(dst, s, n);
  else if (n >= 8)
    copy_two<8>(dst, s, n);
  else if (n >= 4)
    copy_two<4>(dst, s, n);
  else
    for (size_t i = 0; i < n; ++i) dst[i] = s[i];
}

// A copy of any size: copy_small up to 32 bytes, else memcpy.
inline void copy_bytes(void* dst, const void* src, size_t n)
{
  if (n <= 32)
    copy_small(static_cast<unsigned char*>(dst), src, n);
  else
    std::memcpy(dst, src, n);
}

// A copy of n bytes (non-overlapping) that does not hit the slow case of
// glibc's `rep movsb` copy (used from about 2 KiB to half a MiB on CPUs
// with fast string moves): on AMD Zen cores that copy runs an order of
// magnitude slower when the destination lies 1 to 63 bytes past the source
// modulo 4 KiB, because each load waits for stores it only appears to
// alias. That is the usual case between a page-aligned shared slot and a
// buffer from malloc (16 bytes past a page), so such pairs are copied in
// 64-byte moves instead; every other pair goes to memcpy.
inline void copy_large(void* dst, const void* src, size_t n)
{
  const uintptr_t gap =
      (reinterpret_cast<uintptr_t>(dst) - reinterpret_cast<uintptr_t>(src)) &
      4095;
  if (n < 2048 || gap == 0 || gap >= 64) {
    std::memcpy(dst, src, n);
    return;
  }
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    unsigned char x[64];
    std::memcpy(x, s + i, 64);
    std::memcpy(d + i, x, 64);
  }
  if (i < n) std::memcpy(d + i, s + i, n - i);
}

}  // namespace lci::util

#endif  // LCI_UTIL_COPY_HPP
