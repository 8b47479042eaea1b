// The shared-memory segment of one native shm device.
//
// Segment of one device (created by the device, mapped by every peer's
// device of the same index), in cache lines:
//
//   header      magic, sizes, owner pid, the owner's mapping address and a
//               probe word (the CMA probe reads it), then on its own line the
//               count of peers that have mapped the segment
//   doorbell    one 64-bit word per 64 sender ranks, each on its own line:
//               bit r%64 of word r/64 says "ring r may have messages"
//   heads       per sender ring, the consumer's published head (own line)
//   rings       per sender rank, ring_size bytes of 32-byte slots
//
// The segment's name is "/lci-shm-<pid>-<nonce>-<counter>". It is unlinked
// as soon as every peer has mapped it (the owner's poll sees the count of
// mappers reach rank_n - 1) or when the device is destroyed; lcrun removes
// the names of ranks killed by a signal, and the first native context of a
// process those of dead processes of its user (leftovers.hpp). Segments are
// created 0600 (fchmod after shm_open: the umask does not decide).
#ifndef LCI_NET_SHM_SEGMENT_HPP
#define LCI_NET_SHM_SEGMENT_HPP

#include <cstddef>
#include <cstdint>

#include "net/shm/leftovers.hpp"
#include "net/shm/ring.hpp"

namespace lci::net::shm
{

constexpr uint64_t kMagic = 0x4c43492d73686d34ull;  // "LCI-shm4"

struct seg_header_t {
  uint64_t magic;
  uint64_t nranks;
  uint64_t ring_bytes;
  uint64_t owner_pid;
  uint64_t owner_va;    // where the owner mapped the segment
  uint64_t probe_word;  // a random value, read by the peers' CMA probe
  // 1: the owner issues a membarrier when it cools rings down, so senders
  // may publish with plain stores (doorbell.hpp)
  uint64_t heavy_cool;
  uint64_t owner_pidns;          // the owner's pid namespace (leftovers.hpp)
  alignas(64) uint64_t nmapped;  // peers that mapped the segment
};

static_assert(offsetof(seg_header_t, owner_pid) == owner_words_t::kPidOffset &&
                  offsetof(seg_header_t, owner_pidns) ==
                      owner_words_t::kPidnsOffset,
              "the fields reclaim_leftovers reads");

struct layout_t {
  size_t nwords, off_bell, off_ctrl, off_rings, ring_bytes, total;
  layout_t(size_t n, size_t ring)
  {
    nwords = (n + 63) / 64;
    off_bell = sizeof(seg_header_t);
    off_ctrl = off_bell + 64 * nwords;
    off_rings = (off_ctrl + 64 * n + 4095) / 4096 * 4096;
    ring_bytes = ring;
    total = off_rings + n * ring;
  }
};

// A value fixed for this process (segment names, keys).
uint64_t nonce();

// Maps the pages of [p, p + size) now, allocating them in the segment if
// needed, instead of one page fault per 4 KiB while the ring first fills
// (with many ranks, every round of an all-to-all would fault until every
// ring had wrapped). Best effort: MADV_POPULATE_WRITE needs Linux 5.14.
void prefault(void* p, size_t size);

}  // namespace lci::net::shm

#endif  // LCI_NET_SHM_SEGMENT_HPP
