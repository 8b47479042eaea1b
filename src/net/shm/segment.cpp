#include "net/shm/segment.hpp"

#include <sys/mman.h>

#include <chrono>

namespace lci::net::shm
{

uint64_t nonce()
{
  static const uint64_t n = static_cast<uint64_t>(
      std::chrono::steady_clock::now().time_since_epoch().count());
  return n;
}

// Maps the pages of [p, p + size) now, allocating them in the segment if
// needed, instead of one page fault per 4 KiB while the ring first fills
// (with many ranks, every round of an all-to-all would fault until every
// ring had wrapped). Best effort: MADV_POPULATE_WRITE needs Linux 5.14.
void prefault(void* p, size_t size)
{
#ifdef MADV_POPULATE_WRITE
  (void)madvise(p, size, MADV_POPULATE_WRITE);
#else
  (void)p;
  (void)size;
#endif
}

}  // namespace lci::net::shm
