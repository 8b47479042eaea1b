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

// Copies n <= 32 bytes without a call: two overlapping moves of the
// largest power of two not above n (never a byte outside [src, src + n)).
inline void copy_small(unsigned char* dst, const void* src, size_t n)
{
  const auto* s = static_cast<const unsigned char*>(src);
  if (n >= 16) {
    unsigned char x[16], y[16];
    std::memcpy(x, s, 16);
    std::memcpy(y, s + n - 16, 16);
    std::memcpy(dst, x, 16);
    std::memcpy(dst + n - 16, y, 16);
  } else if (n >= 8) {
    uint64_t x, y;
    std::memcpy(&x, s, 8);
    std::memcpy(&y, s + n - 8, 8);
    std::memcpy(dst, &x, 8);
    std::memcpy(dst + n - 8, &y, 8);
  } else if (n >= 4) {
    uint32_t x, y;
    std::memcpy(&x, s, 4);
    std::memcpy(&y, s + n - 4, 4);
    std::memcpy(dst, &x, 4);
    std::memcpy(dst + n - 4, &y, 4);
  } else {
    for (size_t i = 0; i < n; ++i) dst[i] = s[i];
  }
}

}  // namespace lci::util

#endif  // LCI_UTIL_COPY_HPP
