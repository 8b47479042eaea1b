// Upstream LCI 2's process-failure scenario (run with lcrun --keep-going on 3
// ranks; see coll_failure.sh): rank 1 kills itself with SIGKILL. Rank 0 has
// a receive from it outstanding, rank 2 has nothing outstanding with it.
// Each survivor checks:
//   - rank 0: progress throws peer_failure_error naming rank 1 (once), and
//     the receive completes with fatal_peer_failure, rank 1;
//   - rank 2, by default: progress never throws; is_peer_failed(1) turns
//     true within --bound seconds (its own liveness check finds it);
//   - rank 2 with --everywhere (run with LCI_ATTR_PEER_FAILURE_EVERYWHERE=1):
//     progress throws peer_failure_error naming rank 1 exactly once;
//   - both: is_peer_failed is false for the live ranks and refuses a rank
//     out of range; a send to rank 1 throws peer_failure_error; rank 2 then
//     sends rank 0 a message that arrives intact; g_runtime_fina returns.
// Each survivor prints "quiet_failure: rank R: failures=N".
#include <signal.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <lci.hpp>
#include <string>

#include "mp_check.hpp"

namespace
{

constexpr int kVictim = 1;
constexpr lci::tag_t kTagNeverSent = 7;
constexpr lci::tag_t kTagAfter = 8;

double since(std::chrono::steady_clock::time_point t0)
{
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
      .count();
}

// Progress until `done()` or `bound` seconds; counts in `thrown` the peer
// failures progress throws (each must name the victim).
template <typename Done>
void progress_until(Done done, double bound, int* thrown)
{
  auto t0 = std::chrono::steady_clock::now();
  while (!done() && since(t0) < bound) {
    try {
      lci::progress();
    } catch (const lci::peer_failure_error& e) {
      ++*thrown;
      CHECK(e.failed_rank() == kVictim, "progress: failed_rank %d: %s",
            e.failed_rank(), e.what());
    }
  }
}

}  // namespace

int main(int argc, char** argv)
{
  bool everywhere = false;
  double bound = 10;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--everywhere") == 0) {
      everywhere = true;
    } else if (std::strcmp(argv[i], "--bound") == 0 && i + 1 < argc) {
      bound = std::atof(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--everywhere] [--bound SECONDS]\n",
                   argv[0]);
      return 2;
    }
  }
  if (!mp::init_ranks("mp_quiet_failure", 3)) return 2;
  const int me = lci::get_rank_me();
  CHECK(lci::get_g_runtime().get_attr_peer_failure_everywhere() == everywhere,
        "the runtime attribute peer_failure_everywhere is not %d",
        everywhere ? 1 : 0);

  int64_t never = 0;
  lci::comp_t cq = lci::alloc_cq();
  if (me == 0) {
    lci::status_t st =
        lci::post_recv(kVictim, &never, sizeof(never), kTagNeverSent, cq);
    CHECK(st.is_posted(), "the receive from the victim: %s",
          st.error.get_str());
  }
  // every survivor's state is in place before the victim dies
  lci::barrier();
  if (me == kVictim) raise(SIGKILL);

  if (me == 0) {
    lci::status_t got;
    int thrown = 0;
    progress_until(
        [&] {
          got = lci::cq_pop(cq);
          return !got.is_retry();
        },
        bound, &thrown);
    CHECK(got.error.errorcode == lci::errorcode_t::fatal_peer_failure &&
              got.rank == kVictim,
          "the receive from the victim completed with %s, rank %d",
          got.error.get_str(), got.rank);
    // the report may come in the same call as the completion or soon after
    progress_until([&] { return thrown > 0; }, bound, &thrown);
    progress_until([] { return false; }, 0.2, &thrown);
    CHECK(thrown == 1, "progress threw %d peer failures (1 due)", thrown);
  } else {
    int thrown = 0;
    progress_until([] { return lci::is_peer_failed(kVictim); }, bound, &thrown);
    CHECK(lci::is_peer_failed(kVictim), "the victim not failed after %.0f s",
          bound);
    if (everywhere) progress_until([&] { return thrown > 0; }, bound, &thrown);
    progress_until([] { return false; }, 0.2, &thrown);
    CHECK(thrown == (everywhere ? 1 : 0),
          "progress threw %d peer failures on a rank with nothing "
          "outstanding (%d due)",
          thrown, everywhere ? 1 : 0);
  }
  CHECK(!lci::is_peer_failed(0) && !lci::is_peer_failed(2),
        "a live rank is reported failed");
  bool refused = false;
  try {
    lci::is_peer_failed(3);
  } catch (const lci::fatal_error& e) {
    refused = std::strstr(e.what(), "out of range") != nullptr;
  }
  CHECK(refused, "is_peer_failed(3) on 3 ranks was not refused");

  // posting to the failed rank fails clearly
  bool threw = false;
  try {
    lci::post_send(kVictim, &never, sizeof(never), kTagAfter,
                   lci::COMP_NULL_RETRY);
  } catch (const lci::peer_failure_error& e) {
    threw = e.failed_rank() == kVictim;
  }
  CHECK(threw, "a send to the victim did not throw peer_failure_error");

  // the survivors go on: rank 2 sends rank 0 a word, rank 0 sends it back
  const int other = me == 0 ? 2 : 0;
  int64_t word = 0x5157455446414931, in = 0;
  lci::comp_t sync = lci::alloc_sync();
  for (int step = 0; step < 2; ++step) {
    const bool send = (step == 0) == (me == 2);
    lci::status_t st;
    do {
      st = send ? lci::post_send(other, &word, sizeof(word), kTagAfter, sync)
                : lci::post_recv(other, &in, sizeof(in), kTagAfter, sync);
      if (st.is_retry()) lci::progress();
    } while (st.is_retry());
    if (st.is_posted()) lci::sync_wait(sync, &st);
    CHECK(st.is_done(), "the message between the survivors: %s",
          st.error.get_str());
    if (!send)
      CHECK(in == word, "rank %d received %llx", me, (unsigned long long)in);
  }
  lci::free_comp(&sync);
  lci::free_comp(&cq);

  lci::g_runtime_fina();
  std::printf("quiet_failure: rank %d: failures=%d\n", me,
              mp::g_failures.load());
  return mp::exit_status();
}
