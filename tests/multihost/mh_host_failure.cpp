// A whole host fails (tests/multihost/host_failure.sh): ranks placed in
// blocks of --ppn on hosts node0, node1, ...; once every rank has talked
// to every other one (connections up) each writes OUT/ready.<rank> ("<pid>
// <host>") and waits. The driver then kills every rank of host --victim
// (--mode kill) or takes that host's link down (--mode link). Each rank
// that is still alive keeps calling progress with a receive posted from
// every other rank (never sent) and checks:
//   - progress throws peer_failure_error naming exactly the ranks it can
//     no longer reach, each once: the victim host's ranks, or, on the
//     victim host itself when its link is down, every rank of the other
//     hosts;
//   - the receives from those ranks complete with fatal_peer_failure, and
//     those from the others stay posted;
//   - then it tells every rank it did not lose that it is done (a
//     message), waits for theirs (so that no survivor sees another one's
//     exit as a failure), and g_runtime_fina returns;
// then writes OUT/result.<rank>: "failed=<r1,r2,...> detected_ns=<T>
// done_ns=<T> failures=<n>" (realtime clock, read by the driver against
// the time of the fault) and exits 0. --bound S (default 40) gives up
// after S seconds of waiting for the failures (failures=1 in the result).
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <lci.hpp>
#include <set>
#include <string>
#include <vector>

#include "mp_check.hpp"

namespace
{

using mp::g_failures;
using mp::g_rank;

int64_t realtime_ns()
{
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void write_file(const std::string& path, const std::string& text)
{
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) {
    std::perror(tmp.c_str());
    std::exit(3);
  }
  std::fputs(text.c_str(), f);
  std::fclose(f);
  std::rename(tmp.c_str(), path.c_str());  // the reader sees it whole
}

constexpr lci::tag_t kTagHello = 1;
constexpr lci::tag_t kTagNever = 2;
constexpr lci::tag_t kTagDone = 3;

}  // namespace

int main(int argc, char** argv)
{
  int ppn = 1, victim = -1;
  double bound_s = 40;
  std::string mode = "kill", out;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--ppn")
      ppn = std::atoi(argv[i + 1]);
    else if (a == "--victim")
      victim = std::atoi(argv[i + 1]);
    else if (a == "--mode")
      mode = argv[i + 1];
    else if (a == "--out")
      out = argv[i + 1];
    else if (a == "--bound")
      bound_s = std::atof(argv[i + 1]);
  }
  if (ppn < 1 || victim < 0 || out.empty() ||
      (mode != "kill" && mode != "link")) {
    std::fprintf(stderr,
                 "usage: mh_host_failure --ppn P --victim HOST --mode "
                 "kill|link --out DIR [--bound S]\n");
    return 2;
  }
  // hydra (-disable-auto-cleanup) tells the survivors of a dead rank with
  // SIGUSR1, whose default action would end them: LCI's own detection is
  // under test, so the notice is ignored
  signal(SIGUSR1, SIG_IGN);
  lci::g_runtime_init();
  const int me = lci::get_rank_me(), n = lci::get_rank_n();
  g_rank = me;
  const int my_host = me / ppn;
  // the ranks this one must lose
  std::set<int> expected;
  for (int r = 0; r < n; ++r) {
    const bool victim_rank = r / ppn == victim;
    if (my_host == victim ? !victim_rank : victim_rank) expected.insert(r);
  }
  // every pair talks once, so every connection is up before the fault
  std::vector<int> hello_in(n, 0);
  lci::comp_t hello = lci::alloc_sync_x().threshold(n - 1)();
  int hello_out = me;
  for (int r = 0; r < n; ++r) {
    if (r == me) continue;
    lci::post_recv_x(r, &hello_in[r], sizeof(int), kTagHello, hello)
        .allow_retry(false)
        .allow_done(false)();
  }
  for (int r = 0; r < n; ++r)
    if (r != me)
      lci::post_send_x(r, &hello_out, sizeof(int), kTagHello, lci::COMP_NULL)();
  lci::sync_wait(hello, nullptr);
  for (int r = 0; r < n; ++r)
    CHECK(r == me || hello_in[r] == r, "hello from rank %d says %d", r,
          hello_in[r]);
  lci::barrier();
  // a receive from every other rank that nobody sends
  std::vector<int> never(n, 0);
  std::vector<lci::comp_t> never_sync(n);
  for (int r = 0; r < n; ++r) {
    if (r == me) continue;
    never_sync[r] = lci::alloc_sync();
    lci::post_recv_x(r, &never[r], sizeof(int), kTagNever, never_sync[r])
        .allow_retry(false)
        .allow_done(false)();
  }
  // the "done" of every rank this one keeps
  const int nkept = n - 1 - static_cast<int>(expected.size());
  std::vector<int> done_in(n, -1);
  lci::comp_t done_sync =
      lci::alloc_sync_x().threshold(nkept > 0 ? nkept : 1)();
  for (int r = 0; r < n; ++r) {
    if (r == me || expected.count(r)) continue;
    lci::post_recv_x(r, &done_in[r], sizeof(int), kTagDone, done_sync)
        .allow_retry(false)
        .allow_done(false)();
  }
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  write_file(out + "/ready." + std::to_string(me),
             std::to_string(getpid()) + " " + host + "\n");
  // the fault comes; wait for its failures
  std::set<int> failed;
  const int64_t t_start = realtime_ns();
  int64_t t_detected = 0;
  while (failed != expected) {
    try {
      lci::progress();
    } catch (const lci::peer_failure_error& e) {
      const int r = e.failed_rank();
      std::fprintf(stderr, "rank %d (%s): %s\n", me, host, e.what());
      CHECK(failed.count(r) == 0, "rank %d reported twice", r);
      CHECK(expected.count(r) == 1, "rank %d reported, it should be alive", r);
      failed.insert(r);
      t_detected = realtime_ns();
    }
    if (realtime_ns() - t_start > static_cast<int64_t>(bound_s * 1e9)) {
      CHECK(false, "only %zu of %zu failures after %.0f s", failed.size(),
            expected.size(), bound_s);
      break;
    }
  }
  // done: tell the ranks kept, wait for theirs (still reporting any
  // failure, which would be a wrong one)
  int done_out = me;
  for (int r = 0; r < n; ++r)
    if (r != me && !expected.count(r))
      lci::post_send_x(r, &done_out, sizeof(int), kTagDone, lci::COMP_NULL)();
  const int64_t t_done = realtime_ns();
  while (nkept > 0 && !lci::sync_test(done_sync, nullptr)) {
    try {
      lci::progress();
    } catch (const lci::peer_failure_error& e) {
      CHECK(false, "while waiting for the others to be done: %s", e.what());
    }
    if (realtime_ns() - t_done > static_cast<int64_t>(bound_s * 1e9)) {
      CHECK(false, "the ranks kept did not all say they are done");
      break;
    }
  }
  for (int r = 0; r < n; ++r) {
    if (r == me) continue;
    lci::status_t s;
    const bool done = lci::sync_test(never_sync[r], &s);
    if (expected.count(r))
      CHECK(done && s.error == lci::errorcode_t::fatal_peer_failure &&
                s.rank == r,
            "the receive from failed rank %d: done %d", r, done);
    else
      CHECK(!done, "the receive from live rank %d completed", r);
    CHECK(expected.count(r) || done_in[r] == r, "rank %d's done says %d", r,
          done_in[r]);
  }
  for (int r = 0; r < n; ++r)
    if (r != me) lci::free_comp(&never_sync[r]);
  lci::free_comp(&hello);
  lci::free_comp(&done_sync);
  lci::g_runtime_fina();
  std::string list;
  for (int r : failed) list += (list.empty() ? "" : ",") + std::to_string(r);
  write_file(out + "/result." + std::to_string(me),
             "failed=" + list + " detected_ns=" + std::to_string(t_detected) +
                 " done_ns=" + std::to_string(realtime_ns()) +
                 " failures=" + std::to_string(g_failures.load()) + "\n");
  std::printf("rank %d (%s): failed ranks %s; %d check failures\n", me, host,
              list.c_str(), g_failures.load());
  return g_failures ? 1 : 0;
}
