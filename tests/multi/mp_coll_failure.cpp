// A rank dies during a collective (run with lcrun --keep-going; see
// coll_failure.sh): every rank runs blocking collectives (--op allreduce:
// allreduces of --count bytes (default 1) added modulo 256, each result
// checked; --op barrier: barriers; --op allgather: allgathers of --count
// bytes per rank; --op alltoall: alltoalls of --count bytes per block;
// --op broadcast, --op reduce: broadcasts, reduces (added modulo 256) of
// --count bytes to or from rank i % n in collective i, the root checking
// the result), with --algorithm (allreduce: none,
// direct, recursive_doubling, ring); the victim (the last rank) kills itself
// with SIGKILL before collective number --kill-at, so the survivors are inside
// it; or, with --kill-after-ms M, from a thread M ms after its first
// collective, wherever it is then (a broadcast or allgather of 16 KiB and
// more on one node then usually dies inside a round in which its peers read
// its buffer by cross-memory attach, or it theirs). With the point-to-point
// algorithms at 3 ranks and more, some survivors never exchange a message with
// the victim in that collective: they must still get the error, never a result
// that lacks the victim's part (or a barrier the victim never entered). Each
// survivor checks:
//   - the blocking collective raises peer_failure_error naming the victim
//     (failed_rank() and the message) within --bound seconds of its start;
//   - a nonblocking barrier started afterwards completes with
//     fatal_peer_failure and the victim's rank in its status;
//   - a blocking broadcast started afterwards raises peer_failure_error;
//   - g_runtime_fina returns (after 2 s: no survivor exits while another
//     may still be inside the collective).
// Each survivor prints "coll_failure: rank R: failures=N". Exit status 0 on
// success; the victim never exits normally.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <lci.hpp>
#include <string>
#include <thread>
#include <vector>

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
  long kill_after_ms = -1;
  std::string op = "allreduce";
  auto algorithm = lci::allreduce_algorithm_t::none;
  size_t count = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i], v = argv[i + 1];
    if (a == "--bound") {
      bound = std::atof(v.c_str());
    } else if (a == "--kill-at") {
      kill_at = std::atol(v.c_str());
    } else if (a == "--count" && std::atol(v.c_str()) > 0) {
      count = static_cast<size_t>(std::atol(v.c_str()));
    } else if (a == "--kill-after-ms") {
      kill_after_ms = std::atol(v.c_str());
    } else if (a == "--op" &&
               (v == "allreduce" || v == "barrier" || v == "allgather" ||
                v == "broadcast" || v == "reduce" || v == "alltoall")) {
      op = v;
    } else if (a == "--algorithm") {
      const char* names[] = {"none", "direct", "recursive_doubling", "ring"};
      int k = 0;
      while (k < 4 && v != names[k]) ++k;
      if (k == 4) {
        std::fprintf(stderr, "mp_coll_failure: unknown algorithm %s\n",
                     v.c_str());
        return 2;
      }
      algorithm = static_cast<lci::allreduce_algorithm_t>(k);
    } else {
      std::fprintf(stderr, "mp_coll_failure: bad option %s %s\n", a.c_str(),
                   v.c_str());
      return 2;
    }
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
  std::vector<unsigned char> x(count), y(count * static_cast<size_t>(n));
  if (kill_after_ms >= 0) {
    // the survivors go on until the collective the kill lands in
    kill_at = 1L << 40;
    if (me == victim)
      std::thread([kill_after_ms] {
        std::this_thread::sleep_for(std::chrono::milliseconds(kill_after_ms));
        raise(SIGKILL);
      }).detach();
  }
  long raised_at = -1;
  for (long i = 0; i <= kill_at && !raised; ++i) {
    if (me == victim && i == kill_at) raise(SIGKILL);
    for (size_t k = 0; k < count; ++k)
      x[k] = static_cast<unsigned char>(me + i + k);
    auto t0 = std::chrono::steady_clock::now();
    try {
      if (op == "barrier") {
        lci::barrier();
        // a barrier that the victim never entered must not complete
        CHECK(i < kill_at, "barrier %ld completed without the victim", i);
      } else if (op == "allgather") {
        lci::allgather(x.data(), y.data(), count);
        for (size_t k = 0; k < count * static_cast<size_t>(n); ++k) {
          auto due =
              static_cast<unsigned char>(long(k / count) + i + long(k % count));
          if (y[k] == due) continue;
          CHECK(false, "allgather %ld: byte %zu is %u where %u was due", i, k,
                y[k], due);
          break;
        }
      } else if (op == "alltoall") {
        // block j of rank r: bytes r * 16 + j + i + k
        for (size_t k = 0; k < count * static_cast<size_t>(n); ++k)
          y[k] = static_cast<unsigned char>(me * 16 + long(k / count) + i +
                                            long(k % count));
        std::vector<unsigned char> got(y.size(), 0xee);
        lci::alltoall(y.data(), got.data(), count);
        for (size_t k = 0; k < got.size(); ++k) {
          auto due = static_cast<unsigned char>(long(k / count) * 16 + me + i +
                                                long(k % count));
          if (got[k] == due) continue;
          CHECK(false, "alltoall %ld: byte %zu is %u where %u was due", i, k,
                got[k], due);
          break;
        }
      } else if (op == "reduce") {
        const int root = static_cast<int>(i % n);
        std::fill(y.begin(), y.end(), 0xee);
        lci::reduce(x.data(), y.data(), count, 1, &mp::add_bytes, root);
        for (size_t k = 0; me == root && k < count; ++k) {
          auto due = static_cast<unsigned char>(want + n * (i + k));
          if (y[k] == due) continue;
          CHECK(false, "reduce %ld: byte %zu is %u where %u was due", i, k,
                y[k], due);
          break;
        }
      } else if (op == "broadcast") {
        const int root = static_cast<int>(i % n);
        if (me != root) std::memset(x.data(), 0xee, count);
        lci::broadcast(x.data(), count, root);
        for (size_t k = 0; k < count; ++k) {
          auto due = static_cast<unsigned char>(root + i + long(k));
          if (x[k] == due) continue;
          CHECK(false, "broadcast %ld: byte %zu is %u where %u was due", i, k,
                x[k], due);
          break;
        }
      } else {
        lci::allreduce_x(x.data(), y.data(), count, 1, &mp::add_bytes)
            .algorithm(algorithm)();
        for (size_t k = 0; k < count; ++k) {
          auto due = static_cast<unsigned char>(want + n * (i + k));
          if (y[k] == due) continue;
          CHECK(false, "allreduce %ld: byte %zu is %u where %u was due", i, k,
                y[k], due);
          break;
        }
      }
      if (mp::g_failures) {
        // the collectives are out of step from here on: report at once
        std::printf("coll_failure: rank %d: failures=%d\n", me,
                    mp::g_failures.load());
        std::fflush(stdout);
        std::_Exit(1);
      }
    } catch (const lci::peer_failure_error& e) {
      raised = true;
      double t = since(t0);
      std::string needle = "rank " + std::to_string(victim);
      raised_at = i;
      // the victim dies entering collective kill_at, after its part of the
      // one before; a survivor still finishing that one may learn of the
      // failure first, and a collective fails as a whole once a failure is
      // known (every rank takes part in every collective)
      CHECK(i >= kill_at - 1 || kill_after_ms >= 0,
            "collective %ld raised before the kill: %s", i, e.what());
      CHECK(e.failed_rank() == victim, "failed_rank %d: %s", e.failed_rank(),
            e.what());
      CHECK(std::strstr(e.what(), needle.c_str()) != nullptr,
            "the message does not name the victim: %s", e.what());
      CHECK(t <= bound, "the error took %.2f s", t);
      std::printf("coll_failure: rank %d: collective %ld: %s (after %.3f s)\n",
                  me, raised_at, e.what(), t);
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
  // stay a while before exiting: a survivor that exits while another is
  // still inside the collective would be a second failed rank there
  t0 = std::chrono::steady_clock::now();
  while (since(t0) < 2) {
    try {
      lci::progress();
    } catch (const lci::peer_failure_error&) {
    }
    usleep(1000);
  }
  lci::g_runtime_fina();
  std::printf("coll_failure: rank %d: failures=%d\n", me,
              mp::g_failures.load());
  return mp::g_failures ? 1 : 0;
}
