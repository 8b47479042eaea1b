// copy_small: a copy of at most 32 bytes without a call to memcpy, for the
// hot paths that move a small message (the shm ring's push, an active
// message's payload into its buffer). Thread safety: a pure function.
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

}  // namespace lci::util

#endif  // LCI_UTIL_COPY_HPP
