// free_device keeps the runtime's devices moving while it waits for the
// other ranks. Two ranks, two devices each besides the default one (A, B).
// Rank 0 posts a burst of active messages to rank 1 on device B and,
// without polling B again, frees A (a collective: it waits for rank 1)
// and then B. Rank 1 sleeps first, so that rank 0's sends pile up behind a
// full socket (libfabric tcp keeps such sends in its own queue until the
// sender polls again), then polls B until every message has arrived, and
// only then frees A and B. Unless free_device polls B while rank 0 waits
// in A's barrier, rank 1 never gets the burst's tail and the run hangs
// (lcrun's timeout fails it). Every message's payload is checked.
// Run with lcrun -n 2.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <lci.hpp>
#include <thread>
#include <vector>

#include "mp_check.hpp"

namespace
{

// small enough for the provider to take each one as an inject (complete
// at once, data in the provider's queue), many enough to fill the socket
constexpr int kMsgs = 100000;
constexpr size_t kSize = 16;

unsigned char pattern(int seq, size_t i)
{
  return static_cast<unsigned char>(seq * 7 + i * 13 + 1);
}

}  // namespace

int main()
{
  try {
    if (!mp::init_ranks("mp_free_device", 2)) return 2;
    lci::device_t a = lci::alloc_device();
    lci::device_t b = lci::alloc_device();
    lci::comp_t cq = lci::alloc_cq();
    lci::rcomp_t rcomp = lci::register_rcomp(cq);
    if (mp::g_rank == 0) {
      std::vector<unsigned char> buf(kSize);
      lci::comp_t sync = lci::alloc_sync();  // reused: waited on each time
      for (int seq = 0; seq < kMsgs; ++seq) {
        for (size_t i = 0; i < kSize; ++i) buf[i] = pattern(seq, i);
        for (;;) {
          lci::status_t s = lci::post_am_x(1, buf.data(), kSize, sync, rcomp)
                                .device(b)
                                .tag(static_cast<lci::tag_t>(seq))();
          if (s.is_done()) break;
          if (s.is_posted()) {
            lci::sync_wait_x(sync, nullptr).device(b)();
            break;
          }
          lci::progress_x().device(b)();  // retry
        }
      }
      lci::free_comp(&sync);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      int got = 0;
      auto deadline =
          std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (got < kMsgs && std::chrono::steady_clock::now() < deadline) {
        lci::progress_x().device(b)();
        lci::status_t s = lci::cq_pop(cq);
        if (!s.is_done()) continue;
        int seq = static_cast<int>(s.tag);
        CHECK(s.size == kSize, "message %d: %zu bytes", seq, s.size);
        auto* p = static_cast<unsigned char*>(s.buffer);
        long bad = -1;
        for (size_t i = 0; i < s.size && bad < 0; ++i)
          if (p[i] != pattern(seq, i)) bad = static_cast<long>(i);
        CHECK(bad < 0, "message %d: byte %ld is wrong", seq, bad);
        std::free(s.buffer);
        ++got;
      }
      CHECK(got == kMsgs, "%d of %d messages arrived", got, kMsgs);
    }
    lci::free_device(&a);
    lci::free_device(&b);
    lci::deregister_rcomp(rcomp);
    lci::free_comp(&cq);
    lci::g_runtime_fina();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", mp::g_rank, e.what());
    return 1;
  }
  if (mp::g_failures.load() == 0)
    std::printf("mp_free_device: rank %d: ok\n", mp::g_rank);
  return mp::g_failures.load() == 0 ? 0 : 1;
}
