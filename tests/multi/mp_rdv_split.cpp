// Multi-process check of the split rendezvous (core/rendezvous.hpp): on
// native shm with cross-memory attach the receiver reads the tail of a
// large message while the sender writes the head, and reads the whole of a
// message too small to split (get). Rank 0 sends, rank 1 receives, at sizes
// around the eager limit, between it and the smallest size that splits,
// that size, page boundaries and 16 MiB, into buffers at odd offsets; every
// byte is checked, and the bytes each side copied (introspect::counts_t)
// must be the parts the protocol gives it: the receiver reads exactly the
// tail past the first page boundary at or after the middle of its buffer,
// the sender writes the rest; below the split, the receiver reads it all.
// Then active messages (the receiver's buffer is the
// runtime's), a sender that computes for a while between its post and its
// next progress, and a message too large for its receive buffer (both
// sides fail, nothing is written, no context is left). Exit status 0 on
// success. Run with lcrun -n 2.
//
//   --expect-split yes|no   whether the route splits (no: nothing is read
//                           by the receiver nor counted by the sender, by
//                           split or by get)
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <lci.hpp>
#include <string>
#include <thread>
#include <vector>

#include "core/introspect.hpp"
#include "mp_check.hpp"

namespace
{

constexpr uintptr_t kPage = 4096;

unsigned char byte_of(size_t size, size_t i)
{
  return static_cast<unsigned char>((i * 131 + size * 7 + (i >> 12)) & 0xff);
}

// The bytes the receiver of a `size`-byte split rendezvous into `buf` reads
// itself (direct: the smallest direct copy, the shm CMA threshold).
size_t expected_tail(size_t size, const unsigned char* buf, size_t direct)
{
  if (size / 2 < direct + kPage) return 0;  // the sender does not split
  const uintptr_t b = reinterpret_cast<uintptr_t>(buf);
  const uintptr_t mid = (b + size / 2 + kPage - 1) & ~(kPage - 1);
  const size_t head = static_cast<size_t>(mid - b);
  if (head < direct || head >= size || size - head < direct) return 0;
  return size - head;
}

// The bytes the receiver of a `size`-byte rendezvous reads by get: all of
// a message that is a direct copy but too small to split.
size_t expected_get(size_t size, size_t direct)
{
  return size >= direct && size / 2 < direct + kPage ? size : 0;
}

lci::status_t wait(lci::comp_t sync, lci::status_t s)
{
  if (s.is_posted()) lci::sync_wait(sync, &s);
  return s;
}

uint64_t split_read() { return lci::introspect::get_counts().rdv_split_read; }
uint64_t split_written()
{
  return lci::introspect::get_counts().rdv_split_written;
}
uint64_t get_read() { return lci::introspect::get_counts().rdv_get_read; }

}  // namespace

int main(int argc, char** argv)
{
  bool expect_split = true;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--expect-split" && i + 1 < argc)
      expect_split = std::string(argv[++i]) == "yes";
  }
  try {
    if (!mp::init_ranks("mp_rdv_split", 2)) return 2;
    const int rank = mp::g_rank;
    const int peer = 1 - rank;
    const size_t eager = lci::get_max_bcopy_size();
    const size_t direct = lci::get_g_runtime().get_attr_shm_cma_threshold();
    // the smallest size the sender splits, and around it; sizes between
    // the eager limit and it (read whole by the receiver); page sizes and
    // one either side; odd sizes; 16 MiB
    const size_t smin = 2 * (direct + kPage);
    const std::vector<size_t> sizes = {eager + 1,
                                       20480,
                                       24576 + 3,
                                       32768,
                                       smin - kPage - 1,
                                       smin - 1,
                                       smin,
                                       smin + 1,
                                       65536 - 1,
                                       65536,
                                       65536 + 1,
                                       100003,
                                       (size_t(1) << 20) + 4095,
                                       (size_t(1) << 20) + 7,
                                       size_t(16) << 20};
    const std::vector<size_t> offsets = {0, 1, 4095, 2048};
    std::vector<unsigned char> mem((size_t(16) << 20) + 2 * kPage);
    unsigned char* base = reinterpret_cast<unsigned char*>(
        (reinterpret_cast<uintptr_t>(mem.data()) + kPage - 1) & ~(kPage - 1));
    lci::comp_t sync = lci::alloc_sync();
    uint64_t want_tail = 0, split_total = 0, want_get = 0;
    const uint64_t read0 = split_read(), written0 = split_written();
    const uint64_t get0 = get_read();
    lci::tag_t tag = 0;
    for (size_t size : sizes)
      for (size_t k = 0; k < offsets.size(); ++k, ++tag) {
        // the receiver's buffer at an offset, the sender's at another
        const size_t off = offsets[(k + rank) % offsets.size()];
        unsigned char* buf = base + off;
        if (size / 2 >= direct + kPage) split_total += size;
        if (rank == 1) {
          std::memset(buf, 0, size);
          want_tail += expected_tail(size, buf, direct);
          want_get += expected_get(size, direct);
          lci::status_t s =
              wait(sync, mp::post_retrying([&] {
                     return lci::post_recv(peer, buf, size, tag, sync);
                   }));
          CHECK(s.is_done() && s.size == size, "recv of %zu", size);
          size_t bad = size;
          for (size_t i = 0; i < size && bad == size; ++i)
            if (buf[i] != byte_of(size, i)) bad = i;
          CHECK(bad == size,
                "size %zu at offset %zu: byte %zu is %u, expected %u", size,
                off, bad, bad < size ? buf[bad] : 0,
                bad < size ? byte_of(size, bad) : 0);
        } else {
          for (size_t i = 0; i < size; ++i) buf[i] = byte_of(size, i);
          lci::status_t s =
              wait(sync, mp::post_retrying([&] {
                     return lci::post_send(peer, buf, size, tag, sync);
                   }));
          CHECK(s.is_done(), "send of %zu", size);
        }
      }
    // the receiver's count of what it read, to the sender
    uint64_t read = split_read() - read0;
    const uint64_t written = split_written() - written0;
    if (rank == 1) {
      CHECK(read == (expect_split ? want_tail : 0),
            "the receiver read %llu bytes, expected %llu",
            static_cast<unsigned long long>(read),
            static_cast<unsigned long long>(expect_split ? want_tail : 0));
      CHECK(!expect_split || read > 0, "the receiver read nothing");
      const uint64_t got = get_read() - get0;
      CHECK(got == (expect_split ? want_get : 0),
            "the receiver read %llu bytes by get, expected %llu",
            static_cast<unsigned long long>(got),
            static_cast<unsigned long long>(expect_split ? want_get : 0));
      CHECK(!expect_split || got > 0, "the receiver read nothing by get");
      wait(sync, mp::post_retrying([&] {
             return lci::post_send(peer, &read, sizeof(read), 999999, sync);
           }));
    } else {
      uint64_t peer_read = 0;
      wait(sync, mp::post_retrying([&] {
             return lci::post_recv(peer, &peer_read, sizeof(peer_read), 999999,
                                   sync);
           }));
      CHECK(written + peer_read == (expect_split ? split_total : 0),
            "the sender wrote %llu and the receiver read %llu bytes of "
            "%llu split",
            static_cast<unsigned long long>(written),
            static_cast<unsigned long long>(peer_read),
            static_cast<unsigned long long>(split_total));
      CHECK(!expect_split || (written > 0 && peer_read > 0),
            "one side copied nothing");
    }

    // active messages: the receiver's buffer comes from the runtime
    lci::comp_t cq = lci::alloc_cq();
    lci::rcomp_t rcomp = lci::register_rcomp(cq);
    lci::barrier();
    const size_t am_size = (size_t(1) << 20) + 5;
    if (rank == 0) {
      for (size_t i = 0; i < am_size; ++i) base[i] = byte_of(am_size, i);
      wait(sync, mp::post_retrying([&] {
             return lci::post_am(peer, base, am_size, sync, rcomp);
           }));
    } else {
      lci::status_t s;
      do {
        lci::progress();
        s = lci::cq_pop(cq);
      } while (s.is_retry());
      CHECK(s.size == am_size, "am of %zu bytes", s.size);
      auto* b = static_cast<unsigned char*>(s.buffer);
      size_t bad = s.size;
      for (size_t i = 0; i < s.size && bad == s.size; ++i)
        if (b[i] != byte_of(am_size, i)) bad = i;
      CHECK(bad == s.size, "am byte %zu", bad);
      std::free(s.buffer);
    }

    // a sender that computes between its post and its next progress: the
    // receiver's part arrives at once, the rest when the sender progresses
    // again, and its send completes only after the receiver's FIN
    lci::barrier();
    const size_t busy_size = size_t(4) << 20;
    if (rank == 0) {
      for (size_t i = 0; i < busy_size; ++i) base[i] = byte_of(busy_size, i);
      lci::status_t s = mp::post_retrying(
          [&] { return lci::post_send(peer, base, busy_size, 77777, sync); });
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      wait(sync, s);
    } else {
      std::memset(base, 0, busy_size);
      wait(sync, mp::post_retrying([&] {
             return lci::post_recv(peer, base, busy_size, 77777, sync);
           }));
      size_t bad = busy_size;
      for (size_t i = 0; i < busy_size && bad == busy_size; ++i)
        if (base[i] != byte_of(busy_size, i)) bad = i;
      CHECK(bad == busy_size, "busy sender: byte %zu", bad);
    }
    // a message larger than its receive buffer: the receiver refuses it
    // before either side copies, and both report it
    lci::barrier();
    const size_t big = size_t(1) << 20, small = size_t(64) << 10;
    std::memset(base, 0xee, big);
    std::string why;
    try {
      lci::status_t s =
          rank == 0 ? mp::post_retrying([&] {
            return lci::post_send(peer, base, big, 4242, sync);
          })
                    : mp::post_retrying([&] {
                        return lci::post_recv(peer, base, small, 4242, sync);
                      });
      CHECK(s.is_posted(), "the refused transfer's post: %s",
            s.error.get_str());
      // neither completes: the error comes out of progress
      for (;;) lci::progress();
    } catch (const lci::fatal_error& e) {
      why = e.what();
    }
    CHECK(why.find(rank == 0 ? "was refused" : "does not fit") !=
              std::string::npos,
          "refused transfer: '%s'", why.c_str());
    if (rank == 1)
      for (size_t i = 0; i < big; ++i)
        if (base[i] != 0xee) {
          CHECK(false, "the refused message wrote byte %zu", i);
          break;
        }
    lci::barrier();
    const lci::introspect::counts_t c = lci::introspect::get_counts();
    CHECK(c.rdv_ctxs == 0, "%zu rendezvous contexts left", c.rdv_ctxs);
    lci::deregister_rcomp(rcomp);
    lci::free_comp(&cq);
    lci::free_comp(&sync);
    std::printf("mp_rdv_split: rank %d (rdv %s): read %llu written %llu: %s\n",
                rank,
                lci::get_attr_rdv_protocol_str(
                    lci::get_g_runtime().get_attr_rdv_protocol()),
                static_cast<unsigned long long>(read),
                static_cast<unsigned long long>(written),
                mp::g_failures ? "FAILED" : "ok");
    lci::g_runtime_fina();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mp_rdv_split: rank %d: %s\n", mp::g_rank, e.what());
    return 1;
  }
  return mp::exit_status();
}
