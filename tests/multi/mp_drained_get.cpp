// A get served by a target that stops progressing after wait_drained.
// Without CMA (LCI_ATTR_SHM_CMA=0) the native shm backend serves a peer's
// get from the target's side: the target's device pushes the data into the
// initiator's ring, a ring's worth at a time, whenever it is progressed.
// Rank 1 posts a get of 4 MiB (16 rings' worth) from rank 0's registered
// buffer, then tells rank 0 with a send that it has posted it. Rank 0
// receives that send (so the get's request arrived first: one ring, in
// order), calls wait_drained and then sleeps without progressing anything.
// Unless wait_drained counts the backend's pending transfers, most of the
// data is still to push when rank 0 stops, and rank 1's get never
// completes: it must complete before rank 0 wakes up. Every byte is
// checked. Run with lcrun -n 2.
#include <chrono>
#include <cstdio>
#include <exception>
#include <lci.hpp>
#include <thread>
#include <vector>

#include "mp_check.hpp"

namespace
{

constexpr size_t kSize = size_t(4) << 20;
constexpr lci::tag_t kRmrTag = 1, kPostedTag = 2;
// rank 0's sleep after wait_drained; rank 1 gives up on the get before it
constexpr auto kSleep = std::chrono::seconds(6);
constexpr auto kGetLimit = std::chrono::seconds(4);

unsigned char pattern(size_t i)
{
  return static_cast<unsigned char>(i * 31 + 7);
}

}  // namespace

int main()
{
  try {
    if (!mp::init_ranks("mp_drained_get", 2)) return 2;
    lci::barrier();
    if (mp::g_rank == 0) {
      std::vector<unsigned char> region(kSize);
      for (size_t i = 0; i < kSize; ++i) region[i] = pattern(i);
      lci::mr_t mr = lci::register_memory(region.data(), region.size());
      lci::rmr_t rmr = lci::get_rmr(mr);
      lci::post_send(1, &rmr, sizeof(rmr), kRmrTag, lci::COMP_NULL);
      char posted = 0;
      lci::post_recv(1, &posted, sizeof(posted), kPostedTag, lci::COMP_NULL);
      lci::wait_drained();
      // from here on nothing progresses this rank for kSleep
      std::this_thread::sleep_for(kSleep);
      lci::barrier();
      lci::deregister_memory(&mr);
    } else {
      lci::rmr_t rmr;
      lci::post_recv(0, &rmr, sizeof(rmr), kRmrTag, lci::COMP_NULL);
      std::vector<unsigned char> in(kSize, 0);
      lci::comp_t sync = lci::alloc_sync();
      lci::status_t s;
      do {
        s = lci::post_get(0, in.data(), kSize, sync, 0, rmr);
        if (s.is_retry()) lci::progress();
      } while (s.is_retry());
      char posted = 1;
      lci::post_send(0, &posted, sizeof(posted), kPostedTag, lci::COMP_NULL);
      const auto deadline = std::chrono::steady_clock::now() + kGetLimit;
      bool done = s.is_done();
      while (!done && std::chrono::steady_clock::now() < deadline) {
        lci::progress();
        done = lci::sync_test(sync, nullptr);
      }
      CHECK(done,
            "the get did not complete while rank 0 slept after wait_drained");
      if (done) {
        size_t bad = 0;
        for (size_t i = 0; i < kSize; ++i) bad += in[i] != pattern(i);
        CHECK(bad == 0, "%zu bytes of the get differ", bad);
      }
      lci::barrier();  // rank 0 is awake: a get still pending completes now
      while (!done) {
        lci::progress();
        done = lci::sync_test(sync, nullptr);
      }
      lci::free_comp(&sync);
    }
    lci::g_runtime_fina();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", mp::g_rank, e.what());
    return 1;
  }
  if (mp::g_failures.load() != 0) return 1;
  if (mp::g_rank == 0) std::printf("mp_drained_get: ok\n");
  return 0;
}
