// util/copy.hpp: copy_large, copy_bytes and copy_backward give memcpy's
// bytes for the distances between source and destination modulo 4 KiB
// (the backward copy of the aliased distances and memcpy for the others),
// at sizes around each switch (32 and 64 bytes, kLargeCopy), copy_medium
// at every size, and with tails that are not a multiple of the backward
// copy's blocks, and write nothing outside the destination.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "util/copy.hpp"

namespace
{

using copy_fn = void (*)(void*, const void*, size_t);

// Copies with `copy` at every size and distance given, from a page-aligned
// source (as the node-local team's slots and the shm rings are), and checks
// the destination and the 256 bytes on either side of it.
void check_copies(copy_fn copy, const char* name,
                  const std::vector<size_t>& sizes,
                  const std::vector<size_t>& gaps)
{
  constexpr size_t kArea = size_t(64) << 10;
  constexpr size_t kGuard = 256;
  std::vector<unsigned char> src_area(kArea + 8192), dst_area(kArea + 8192);
  auto align = [](unsigned char* p) {
    return p + ((4096 - reinterpret_cast<uintptr_t>(p) % 4096) % 4096);
  };
  unsigned char* src = align(src_area.data());
  // a guard's room in front of the destination's page
  unsigned char* dst_page = align(dst_area.data() + kGuard);
  for (size_t i = 0; i < kArea; ++i)
    src[i] = static_cast<unsigned char>(i * 131 + 7);
  for (size_t n : sizes)
    for (size_t gap : gaps) {
      unsigned char* dst = dst_page + gap;
      ASSERT_LE(dst + n + kGuard, dst_area.data() + dst_area.size());
      std::memset(dst - kGuard, 0xee, n + 2 * kGuard);
      copy(dst, src, n);
      if (std::memcmp(dst, src, n) != 0) {
        size_t i = 0;
        while (dst[i] == src[i]) ++i;
        FAIL() << name << " size " << n << " gap " << gap << ": byte " << i
               << " differs";
      }
      for (size_t i = 1; i <= kGuard; ++i)
        ASSERT_EQ(dst[-static_cast<ptrdiff_t>(i)], 0xee)
            << name << " size " << n << " gap " << gap << " wrote " << i
            << " byte(s) before the destination";
      for (size_t i = 0; i < kGuard; ++i)
        ASSERT_EQ(dst[n + i], 0xee)
            << name << " size " << n << " gap " << gap << " wrote past the "
            << "destination at byte " << n + i;
    }
}

// every distance at which copy_large switches to copy_backward, and those
// around them
std::vector<size_t> near_gaps()
{
  std::vector<size_t> g;
  for (size_t i = 0; i <= 66; ++i) g.push_back(i);
  for (size_t i : {128, 2048, 4032, 4080, 4095}) g.push_back(i);
  return g;
}

TEST(CopyBackward, EveryTail)
{
  // the 128-byte blocks of the AVX2 copy, the 64-byte ones of the other,
  // and the short copy of what is left in front of them
  std::vector<size_t> sizes;
  for (size_t n = 0; n <= 260; ++n) sizes.push_back(n);
  for (size_t n : {4096 + 16, 8192 + 16 + 5, 16368, 65536 - 1000})
    sizes.push_back(n);
  check_copies(lci::util::copy_backward, "copy_backward", sizes,
               {0, 1, 8, 24, 31, 32, 63, 64, 4095});
}

TEST(CopyBytes, EverySwitchAndGap)
{
  // copy_small up to 32 bytes, two 32-byte moves up to 64, memcpy below
  // kLargeCopy, copy_large above: the sizes of the shm eager messages
  // (payload and 16-byte header) too
  const size_t k = lci::util::kLargeCopy;
  std::vector<size_t> sizes;
  for (size_t n = 0; n <= 140; ++n) sizes.push_back(n);
  for (size_t n : {size_t(1024), k - 1, k, k + 1, size_t(4096 + 16),
                   size_t(8192 + 16), size_t(16368)})
    sizes.push_back(n);
  check_copies(lci::util::copy_bytes, "copy_bytes", sizes, near_gaps());
}

TEST(CopyMedium, EverySize)
{
  // copy_small up to 32 bytes, two overlapping moves of 32 then 64 bytes
  // up to kMediumCopy (the native shm receive's inline copy)
  std::vector<size_t> sizes;
  for (size_t n = 0; n <= lci::util::kMediumCopy; ++n) sizes.push_back(n);
  check_copies(
      [](void* d, const void* s, size_t n) {
        lci::util::copy_medium(static_cast<unsigned char*>(d), s, n);
      },
      "copy_medium", sizes, {0, 1, 8, 16, 24, 31, 32, 63, 64, 4095});
}

TEST(CopyLarge, EveryGapAndTail)
{
  check_copies(lci::util::copy_large, "copy_large",
               {1, 63, 2047, 2048, 2049, 4096, 4159, 65536 - 1000},
               near_gaps());
}

}  // namespace
