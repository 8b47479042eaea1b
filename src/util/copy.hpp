// copy_small: a copy of at most 32 bytes without a call to memcpy.
// copy_medium: the same up to 128 bytes.
// copy_large: a copy of buffers of kilobytes whose addresses the caller
// does not choose (a user buffer and a page-aligned shared slot or a ring).
// copy_bytes, which copies inline up to 64 bytes and uses copy_large from
// kLargeCopy: for the paths that move a message of any size (the shm
// ring's push, an eager payload into its buffer).
// Thread safety: pure functions.
#ifndef LCI_UTIL_COPY_HPP
#define LCI_UTIL_COPY_HPP

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace lci::util
{

// 16 bytes in one vector register
typedef unsigned char bytes16_t __attribute__((vector_size(16)));

// n (W to 2W) bytes as two overlapping moves of W bytes, all loads first;
// above 16 bytes in vectors of 16 (so the compiler keeps them in
// registers instead of staging them on the stack)
template <size_t W>
inline void copy_two(unsigned char* dst, const unsigned char* src, size_t n)
{
  if constexpr (W <= 16) {
    unsigned char x[W], y[W];
    std::memcpy(x, src, W);
    std::memcpy(y, src + n - W, W);
    std::memcpy(dst, x, W);
    std::memcpy(dst + n - W, y, W);
  } else {
    constexpr size_t k = W / 16;
    bytes16_t x[k], y[k];
    for (size_t i = 0; i < k; ++i) {
      std::memcpy(&x[i], src + 16 * i, 16);
      std::memcpy(&y[i], src + n - W + 16 * i, 16);
    }
    for (size_t i = 0; i < k; ++i) {
      std::memcpy(dst + 16 * i, &x[i], 16);
      std::memcpy(dst + n - W + 16 * i, &y[i], 16);
    }
  }
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

// The largest copy copy_medium makes.
constexpr size_t kMediumCopy = 128;

// Copies n <= kMediumCopy bytes without a call: copy_small up to 32 bytes,
// else two overlapping moves of 32 or 64 bytes (never a byte outside
// [src, src + n)). A small message's copies (into a ring, out of it, into
// the user's buffer) are a few such moves each; memcpy's call and size
// dispatch would cost as many instructions again.
inline void copy_medium(unsigned char* dst, const void* src, size_t n)
{
  const auto* s = static_cast<const unsigned char*>(src);
  if (n <= 32)
    copy_small(dst, s, n);
  else if (n <= 64)
    copy_two<32>(dst, s, n);
  else
    copy_two<64>(dst, s, n);
}

// The size from which copy_large checks the distance between its buffers:
// glibc's `rep_movsb_threshold` on CPUs with fast short string moves
// (FSRM), where its memcpy turns from a loop of vector moves, which 4 KiB
// aliasing does not slow down, to `rep movsb` (up to about half a MiB),
// which it does.
constexpr size_t kLargeCopy = 2112;

// The n bytes at src to dst (non-overlapping) from the end down
// (copy.cpp): each load then lies below the stores still in flight, never
// just above one modulo 4 KiB. 32-byte moves where the CPU has AVX2, the
// stores aligned.
void copy_backward(void* dst, const void* src, size_t n);

// A copy of n bytes (non-overlapping) that does not hit the slow case of
// glibc's `rep movsb` copy: on AMD Zen cores that copy runs an order of
// magnitude slower when the destination lies 1 to 63 bytes past the source
// modulo 4 KiB, because each load waits for stores it only appears to
// alias. That is the usual case between a page-aligned shared slot and a
// buffer from malloc (16 bytes past a page), and between a ring's 32-byte
// slots and a user buffer at every few positions of the ring, so such pairs
// are copied from the end down instead; every other pair goes to memcpy.
inline void copy_large(void* dst, const void* src, size_t n)
{
  const uintptr_t gap =
      (reinterpret_cast<uintptr_t>(dst) - reinterpret_cast<uintptr_t>(src)) &
      4095;
  if (n < kLargeCopy || gap == 0 || gap >= 64) {
    std::memcpy(dst, src, n);
    return;
  }
  copy_backward(dst, src, n);
}

// A copy of any size whose addresses the caller does not choose (a
// message between a ring or packet and a user buffer): copy_small up to 32
// bytes, two 32-byte moves up to 64 (above, without wider vector moves
// than the build's, memcpy's costs fewer instructions), memcpy below
// kLargeCopy, copy_large from there.
inline void copy_bytes(void* dst, const void* src, size_t n)
{
  auto* d = static_cast<unsigned char*>(dst);
  if (n <= 32)
    copy_small(d, src, n);
  else if (n <= 64)
    copy_two<32>(d, static_cast<const unsigned char*>(src), n);
  else if (n < kLargeCopy)
    std::memcpy(dst, src, n);
  else
    copy_large(dst, src, n);
}

}  // namespace lci::util

#endif  // LCI_UTIL_COPY_HPP
