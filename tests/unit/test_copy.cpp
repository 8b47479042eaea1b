// util/copy.hpp: copy_large gives memcpy's bytes for every distance between
// source and destination modulo 4 KiB (the 64-byte moves of the aliased
// distances and memcpy for the others), at sizes around the switch and
// with tails that are not a multiple of 64, and writes nothing outside
// the destination.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "util/copy.hpp"

namespace
{

TEST(CopyLarge, EveryGapAndTail)
{
  constexpr size_t kArea = size_t(64) << 10;
  // page-aligned areas, as the node-local team's slots are
  std::vector<unsigned char> src_area(kArea + 8192), dst_area(kArea + 8192);
  auto align = [](unsigned char* p) {
    return p + ((4096 - reinterpret_cast<uintptr_t>(p) % 4096) % 4096);
  };
  unsigned char* src = align(src_area.data());
  unsigned char* dst_page = align(dst_area.data());
  for (size_t i = 0; i < kArea; ++i)
    src[i] = static_cast<unsigned char>(i * 131 + 7);
  const size_t sizes[] = {1, 63, 2047, 2048, 2049, 4096, 4159, 65536 - 1000};
  const size_t gaps[] = {0, 1, 16, 31, 32, 63, 64, 65, 2048, 4080, 4095};
  for (size_t n : sizes)
    for (size_t gap : gaps) {
      std::fill(dst_area.begin(), dst_area.end(), 0xee);
      unsigned char* dst = dst_page + gap;
      lci::util::copy_large(dst, src, n);
      for (size_t i = 0; i < n; ++i)
        ASSERT_EQ(dst[i], src[i])
            << "size " << n << " gap " << gap << " byte " << i;
      for (unsigned char* p = dst_area.data(); p < dst; ++p)
        ASSERT_EQ(*p, 0xee) << "wrote before the destination";
      for (unsigned char* p = dst + n; p < dst_area.data() + dst_area.size();
           ++p)
        ASSERT_EQ(*p, 0xee) << "wrote past the destination";
    }
}

}  // namespace
