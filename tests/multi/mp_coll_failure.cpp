// A rank dies during a collective (run with lcrun --keep-going; see
// coll_failure.sh): every rank runs blocking allreduces of one byte (added
// modulo 256), each result checked; the victim (the last rank) kills itself
// with SIGKILL before collective number --kill-at, so the survivors are
// inside it. Each survivor checks:
//   - the blocking allreduce raises peer_failure_error naming the victim
//     (failed_rank() and the message) within --bound seconds of its start;
//   - a nonblocking barrier started afterwards completes with
//     fatal_peer_failure and the victim's rank in its status;
//   - a blocking broadcast started afterwards raises peer_failure_error;
//   - g_runtime_fina returns.
// Each survivor prints "coll_failure: rank R: failures=N". Exit status 0 on
// success; the victim never exits normally.
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

double since(std::chrono::steady_clock::time_point t0)
{
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
      .count();
}

}  // namespace

int main(int argc, char** argv)
{
  double bound = 10;
  long kill_at = 2000;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--bound")
      bound = std::atof(argv[i + 1]);
    else if (a == "--kill-at")
      kill_at = std::atol(argv[i + 1]);
  }
  lci::g_runtime_init();
  mp::g_rank = lci::get_rank_me();
  const int me = mp::g_rank, n = lci::get_rank_n();
  if (n < 2) {
    std::fprintf(stderr, "mp_coll_failure: needs 2 ranks or more\n");
    return 2;
  }
  const int victim = n - 1;
  const unsigned want = static_cast<unsigned>(n * (n - 1) / 2);
  bool raised = false;
  for (long i = 0; i <= kill_at && !raised; ++i) {
    if (me == victim && i == kill_at) raise(SIGKILL);
    auto x = static_cast<unsigned char>(me + i);
    unsigned char y = 0;
    auto t0 = std::chrono::steady_clock::now();
    try {
      lci::allreduce(&x, &y, 1, 1, &mp::add_bytes);
      CHECK(y == static_cast<unsigned char>(want + n * i), "allreduce %ld: %u",
            i, y);
    } catch (const lci::peer_failure_error& e) {
      raised = true;
      double t = since(t0);
      std::string needle = "rank " + std::to_string(victim);
      CHECK(i == kill_at, "allreduce %ld raised before the kill: %s", i,
            e.what());
      CHECK(e.failed_rank() == victim, "failed_rank %d: %s", e.failed_rank(),
            e.what());
      CHECK(std::strstr(e.what(), needle.c_str()) != nullptr,
            "the message does not name the victim: %s", e.what());
      CHECK(t <= bound, "the error took %.2f s", t);
      std::printf("coll_failure: rank %d: %s (after %.3f s)\n", me, e.what(),
                  t);
    }
  }
  CHECK(raised, "no peer_failure_error from the collective of the kill");
  // a nonblocking collective after the failure: completes with the error
  lci::comp_t sync = lci::alloc_sync();
  lci::status_t s;
  auto t0 = std::chrono::steady_clock::now();
  try {
    lci::barrier_x().comp(sync)();
    while (!lci::sync_test(sync, &s) && since(t0) < bound) {
      try {
        lci::progress();
      } catch (const lci::peer_failure_error&) {
        // the failure reported by progress: expected once
      }
    }
    CHECK(s.error.errorcode == lci::errorcode_t::fatal_peer_failure &&
              s.rank == victim,
          "nonblocking barrier: %s rank %d", s.error.get_str(), s.rank);
  } catch (const lci::peer_failure_error& e) {
    // refused at once (the point-to-point algorithms' first post to the
    // victim throws) is fine too
    CHECK(e.failed_rank() == victim, "nonblocking barrier: %s", e.what());
  }
  lci::free_comp(&sync);
  // a blocking one raises
  bool threw = false;
  try {
    uint64_t v = 5;
    lci::broadcast(&v, sizeof(v), 0);
  } catch (const lci::peer_failure_error& e) {
    threw = e.failed_rank() == victim;
  }
  CHECK(threw, "a broadcast after the failure did not raise");
  lci::g_runtime_fina();
  std::printf("coll_failure: rank %d: failures=%d\n", me,
              mp::g_failures.load());
  return mp::g_failures ? 1 : 0;
}
