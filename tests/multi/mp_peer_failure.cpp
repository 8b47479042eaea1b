// Peer failure (run with lcrun --keep-going -n 2 or 3):
// the victim rank (default: the last) kills itself with SIGKILL at an
// agreed wall-clock time T0 (later if a survivor is late to say it is
// ready), while every survivor has operations outstanding with it:
//   - a receive posted with the victim as source (the victim never sends);
//   - a rendezvous send to the victim (never received: it sleeps);
//   - a rendezvous receive of the victim's last send (its RTS may arrive,
//     its data never does);
//   - a 1 KiB send with comp_semantic network to the victim (on shm it
//     completes only when the target has processed it);
//   - two puts into the victim's registered region, before and after the
//     survivor says it is ready (each may or may not complete before T0:
//     either way its completion must come);
//   - an ANY_SOURCE receive, which must stay posted;
//   - a nonblocking broadcast rooted at the victim (direct: each survivor
//     receives from it), which the victim never joins.
//   - on a third device, which the victim never progresses (so nothing
//     posted there can complete while it lives, whatever the timing), one
//     operation of each kind, all completing into one completion queue:
//     a receive, a rendezvous send, a rendezvous active message, a small
//     put with signal (completed by the target's ack), and, with
//     --strict-rma (backends whose RMA and network completions need the
//     target's progress: the native shm backend below its CMA threshold),
//     a put, a get, a put and a get with signal, a send and an active
//     message with comp_semantic network.
// Each survivor keeps calling progress and checks:
//   - progress throws peer_failure_error naming the victim within --bound
//     seconds of T0, once (later progress calls do not throw again);
//   - the receives, the rendezvous send and the broadcast completed with
//     errorcode_t::fatal_peer_failure (the broadcast naming the victim), each
//     put and the network-semantic send with that or done (they may have
//     completed before the victim died);
//   - every operation of the third device came out of the queue with
//     fatal_peer_failure (never done), the victim's rank and its
//     user_context; each prints "must-fail <kind>: <error>", which
//     peer_failure.sh counts;
//   - a new post to the victim throws peer_failure_error at once;
//   - the survivors still exchange messages (eager and rendezvous, checked
//     byte by byte) on a second device, and with --ring-default on the
//     default device too, and the ANY_SOURCE receive is matched by one of
//     them. Not on shm's default device: libfabric's shm provider completes
//     the operations of an endpoint in the order of its response queue, so
//     an operation that waits for the dead rank's response (a put, a
//     packet of over 4 KiB to it) holds back the completion of every later
//     one that needs a response (docs/RELIABILITY.md);
//   - g_runtime_fina returns within --bound seconds.
// Prints "detect_ms=<ms from T0 to the exception>" per survivor (read by
// docs/RELIABILITY.md's measurement). Exit status 0 on success; the victim
// never exits normally.
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
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

using mp::g_failures;
using mp::g_rank;

int64_t realtime_ns()
{
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

double seconds_since(int64_t t0) { return (realtime_ns() - t0) / 1e9; }

constexpr lci::tag_t kTagNeverSent = 100;
constexpr lci::tag_t kTagRdv = 101;
constexpr lci::tag_t kTagRdvIn = 102;
constexpr lci::tag_t kTagNet = 103;
constexpr lci::tag_t kTagAny = 200;
constexpr lci::tag_t kTagReady = 201;
constexpr lci::tag_t kTagRing = 300;
constexpr size_t kRdvSize = 256 * 1024;
constexpr size_t kPut2 = 4 << 20;  // the second put: long enough to be
                                   // in flight when the victim dies
constexpr size_t kRegion = 16 << 20;

unsigned char pattern(int src, size_t i)
{
  return static_cast<unsigned char>(src * 31 + i * 7 + 1);
}

// Polls a synchronizer with progress, swallowing nothing: returns false if
// it did not fire within `seconds`.
bool wait_for(lci::comp_t sync, lci::status_t* out, double seconds,
              lci::device_t dev = lci::device_t())
{
  int64_t start = realtime_ns();
  while (!lci::sync_test(sync, out)) {
    lci::progress_x().device(dev)();
    if (seconds_since(start) > seconds) {
      *out = lci::status_t();  // not a stale status of an earlier wait
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv)
{
  double bound = 10;
  int victim = -1;
  bool ring_default = false;
  bool strict_rma = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--strict-rma") strict_rma = true;
    if (a == "--bound" && i + 1 < argc)
      bound = std::atof(argv[++i]);
    else if (a == "--victim" && i + 1 < argc)
      victim = std::atoi(argv[++i]);
    else if (a == "--ring-default")
      ring_default = true;
  }
  lci::g_runtime_init();
  g_rank = lci::get_rank_me();
  const int n = lci::get_rank_n();
  if (victim < 0) victim = n - 1;
  if (n < 2 || victim >= n) {
    std::fprintf(stderr, "mp_peer_failure: needs 2 ranks or more\n");
    return 2;
  }
  const bool is_victim = g_rank == victim;

  // a device that never talks to the victim (see the header on shm)
  lci::device_t dev2 = lci::alloc_device();
  // a device the victim never progresses
  lci::device_t dev3 = lci::alloc_device();
  // the remote completion of active messages and signals to the victim
  // (every rank registers one, so the handles agree)
  lci::comp_t am_cq = lci::alloc_cq();
  lci::rcomp_t rcomp = lci::register_rcomp(am_cq);

  // the victim's region, for the put
  std::vector<char> region(kRegion);
  lci::mr_t mr = lci::register_memory(region.data(), region.size());
  lci::rmr_t victim_rmr = lci::get_rmr(mr);
  lci::broadcast(&victim_rmr, sizeof(victim_rmr), victim);
  // T0, the victim's death, on every rank's clock (one host)
  int64_t t0 = realtime_ns() + 1000000000;
  lci::broadcast(&t0, sizeof(t0), 0);

  if (is_victim) {
    // wait until every survivor has posted its first operations (so none is
    // still inside the broadcast, which may need this rank's progress, when
    // it dies), then no progress: what is sent from here on is not received
    std::vector<int64_t> words(n);
    for (int r = 0; r < n; ++r) {
      if (r == victim) continue;
      lci::comp_t c = lci::alloc_sync();
      // done: it had arrived already (the synchronizer is not signalled)
      if (lci::post_recv(r, &words[r], sizeof(int64_t), kTagReady, c)
              .is_posted())
        lci::sync_wait(c, nullptr);
      lci::free_comp(&c);
    }
    // a rendezvous send to every survivor: its RTS may go out, the rest
    // never will (no more progress here)
    std::vector<char> big(kRdvSize, 'v');
    lci::comp_t sent = lci::alloc_sync();
    for (int r = 0; r < n; ++r)
      if (r != victim)
        lci::post_send_x(r, big.data(), big.size(), kTagRdvIn, sent)
            .allow_retry(false)();
    while (realtime_ns() < t0)
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    raise(SIGKILL);
    return 99;  // not reached
  }

  // survivors: the operations outstanding with the victim
  std::vector<char> rbuf(64), sbuf(kRdvSize, 'x'), pbuf(64 * 1024, 'p');
  lci::comp_t s_recv = lci::alloc_sync();
  lci::comp_t s_rdv = lci::alloc_sync();
  lci::comp_t s_put = lci::alloc_sync();
  lci::comp_t s_any = lci::alloc_sync();
  lci::status_t st;
  st = lci::post_recv(victim, rbuf.data(), rbuf.size(), kTagNeverSent, s_recv);
  CHECK(st.is_posted(), "receive from the victim: %s", st.error.get_str());
  st = lci::post_send_x(victim, sbuf.data(), sbuf.size(), kTagRdv, s_rdv)
           .allow_retry(false)();
  CHECK(st.is_posted(), "rendezvous send to the victim: %s",
        st.error.get_str());
  st = lci::post_put_x(victim, pbuf.data(), pbuf.size(), s_put,
                       static_cast<uint64_t>(g_rank) * pbuf.size(), victim_rmr)
           .allow_retry(false)();
  const bool put_done_at_once = st.is_done();
  CHECK(st.is_posted() || st.is_done(), "put to the victim: %s",
        st.error.get_str());
  // the victim's rendezvous send to us: matched or not, it cannot finish
  std::vector<char> rin(kRdvSize);
  lci::comp_t s_rdvin = lci::alloc_sync();
  st = lci::post_recv(victim, rin.data(), rin.size(), kTagRdvIn, s_rdvin);
  CHECK(st.is_posted(), "rendezvous receive from the victim: %s",
        st.error.get_str());
  int64_t ready = g_rank;
  lci::post_send(victim, &ready, sizeof(ready), kTagReady, lci::COMP_NULL);
  // a second put: the victim has (most likely) stopped receiving by now
  lci::comp_t s_put2 = lci::alloc_sync();
  std::vector<char> pbuf2(kPut2, 'q');
  st = lci::post_put_x(victim, pbuf2.data(), pbuf2.size(), s_put2,
                       static_cast<uint64_t>(g_rank % 3) * kPut2, victim_rmr)
           .allow_retry(false)();
  const bool put2_done_at_once = st.is_done();
  // a send with comp_semantic network: on shm it completes only once the
  // target has processed it, which the victim no longer does
  std::vector<char> nbuf(1024, 'n');
  lci::comp_t s_net = lci::alloc_sync();
  st = lci::post_send_x(victim, nbuf.data(), nbuf.size(), kTagNet, s_net)
           .comp_semantic(lci::comp_semantic_t::network)
           .allow_retry(false)();
  CHECK(st.is_posted(), "network-semantic send to the victim: %s",
        st.error.get_str());
  CHECK(st.is_posted() || st.is_done(), "second put to the victim: %s",
        st.error.get_str());
  std::vector<char> bcast(64);
  lci::comp_t s_coll = lci::alloc_sync();
  lci::broadcast_x(bcast.data(), bcast.size(), victim)
      .algorithm(lci::broadcast_algorithm_t::direct)
      .comp(s_coll)();
  std::vector<char> any_buf(16);
  st = lci::post_recv(lci::ANY_SOURCE, any_buf.data(), any_buf.size(), kTagAny,
                      s_any);
  CHECK(st.is_posted(), "ANY_SOURCE receive: %s", st.error.get_str());

  // one operation of each kind on the device the victim never progresses,
  // completing into one queue (user_context: its entry of `kinds`)
  struct kind_t {
    const char* name;
    bool strict;  // needs the victim's progress on every backend
    std::vector<char> buf;
  };
  std::vector<kind_t> kinds;
  auto add_kind = [&](const char* name, bool strict, size_t size) {
    kinds.push_back(kind_t{name, strict, std::vector<char>(size, 'k')});
  };
  add_kind("receive", true, 64);
  add_kind("rendezvous send", true, kRdvSize);
  add_kind("rendezvous active message", true, kRdvSize);
  add_kind("small put with signal", true, 64);
  if (strict_rma) {
    add_kind("put", true, 4096);
    add_kind("get", true, 4096);
    add_kind("put with signal", true, 4096);
    add_kind("get with signal", true, 4096);
    add_kind("network-semantic send", true, 1024);
    add_kind("network-semantic active message", true, 1024);
  }
  lci::comp_t q = lci::alloc_cq();
  const uint64_t disp3 = (uint64_t(12) << 20) + uint64_t(g_rank) * kRdvSize;
  for (size_t k = 0; k < kinds.size(); ++k) {
    const std::string name = kinds[k].name;
    char* b = kinds[k].buf.data();
    const size_t size = kinds[k].buf.size();
    void* ctx = &kinds[k];
    if (name == "receive") {
      st = lci::post_recv_x(victim, b, size, kTagNeverSent + 10, q)
               .device(dev3)
               .user_context(ctx)();
    } else if (name == "rendezvous send" || name == "network-semantic send") {
      st = lci::post_send_x(victim, b, size, kTagNet + 10, q)
               .device(dev3)
               .user_context(ctx)
               .comp_semantic(name == "rendezvous send"
                                  ? lci::comp_semantic_t::memory
                                  : lci::comp_semantic_t::network)
               .allow_retry(false)();
    } else if (name == "rendezvous active message" ||
               name == "network-semantic active message") {
      st = lci::post_am_x(victim, b, size, q, rcomp)
               .device(dev3)
               .user_context(ctx)
               .comp_semantic(name == "rendezvous active message"
                                  ? lci::comp_semantic_t::memory
                                  : lci::comp_semantic_t::network)
               .allow_retry(false)();
    } else {
      const bool put = name.find("put") != std::string::npos;
      const bool signal = name.find("signal") != std::string::npos;
      st = lci::post_comm_x(put ? lci::direction_t::OUT : lci::direction_t::IN,
                            victim, b, size, q)
               .rmr(victim_rmr)
               .remote_disp(disp3)
               .remote_comp(signal ? rcomp : lci::RCOMP_NULL)
               .device(dev3)
               .user_context(ctx)
               .allow_retry(false)();
    }
    CHECK(st.is_posted(), "%s to the victim: %s (expected posted)",
          name.c_str(), st.error.get_str());
  }

  // progress until the failure is reported
  double detect = -1;
  int thrown = 0;
  while (seconds_since(t0) < bound + 1) {
    try {
      lci::progress();
    } catch (const lci::peer_failure_error& e) {
      ++thrown;
      detect = seconds_since(t0);
      CHECK(e.failed_rank() == victim, "failed_rank %d, victim %d (%s)",
            e.failed_rank(), victim, e.what());
      CHECK(std::strstr(e.what(), std::to_string(victim).c_str()) != nullptr,
            "the message names the rank: %s", e.what());
      std::fprintf(stderr, "rank %d: %s\n", g_rank, e.what());
      break;
    }
  }
  CHECK(thrown == 1, "no peer_failure_error within %g s of the kill", bound);
  CHECK(detect >= 0 && detect <= bound, "detected after %.3f s (bound %g s)",
        detect, bound);
  std::printf("rank %d: detect_ms=%.1f\n", g_rank, detect * 1000);

  // no second report for the same rank
  for (int i = 0; i < 1000; ++i) {
    try {
      lci::progress();
    } catch (const lci::peer_failure_error& e) {
      CHECK(false, "a second peer_failure_error: %s", e.what());
      break;
    }
  }

  // the outstanding operations completed with an error
  lci::status_t out;
  CHECK(wait_for(s_recv, &out, bound), "the receive from the victim hangs");
  CHECK(out.error == lci::errorcode_t::fatal_peer_failure && out.rank == victim,
        "the receive from the victim: %s rank %d", out.error.get_str(),
        out.rank);
  CHECK(wait_for(s_rdv, &out, bound), "the rendezvous send hangs");
  CHECK(out.error == lci::errorcode_t::fatal_peer_failure && out.rank == victim,
        "the rendezvous send: %s rank %d", out.error.get_str(), out.rank);
  CHECK(wait_for(s_rdvin, &out, bound), "the rendezvous receive hangs");
  CHECK(out.error == lci::errorcode_t::fatal_peer_failure && out.rank == victim,
        "the rendezvous receive: %s rank %d", out.error.get_str(), out.rank);
  CHECK(wait_for(s_coll, &out, bound), "the broadcast hangs");
  CHECK(out.error == lci::errorcode_t::fatal_peer_failure && out.rank == victim,
        "the broadcast: %s rank %d", out.error.get_str(), out.rank);
  CHECK(wait_for(s_net, &out, bound), "the network-semantic send hangs");
  CHECK(out.error == lci::errorcode_t::fatal_peer_failure ||
            out.error == lci::errorcode_t::done,
        "the network-semantic send: %s", out.error.get_str());
  std::printf("rank %d: network send %s\n", g_rank, out.error.get_str());
  for (auto put : {std::make_pair(s_put, put_done_at_once),
                   std::make_pair(s_put2, put2_done_at_once)}) {
    if (put.second) continue;
    CHECK(wait_for(put.first, &out, bound), "a put hangs");
    CHECK(out.error == lci::errorcode_t::fatal_peer_failure ||
              out.error == lci::errorcode_t::done,
          "a put: %s", out.error.get_str());
    std::printf("rank %d: put %s\n", g_rank, out.error.get_str());
  }
  CHECK(!lci::sync_test(s_any, &out), "the ANY_SOURCE receive fired: %s",
        out.error.get_str());

  // the third device's operations: every one failed, none reads as done
  {
    std::vector<int> seen(kinds.size(), 0);
    size_t got = 0;
    const int64_t start = realtime_ns();
    while (got < kinds.size() && seconds_since(start) <= bound) {
      lci::progress_x().device(dev3)();
      lci::status_t qs = lci::cq_pop(q);
      if (qs.is_retry()) continue;
      ++got;
      size_t k = 0;
      while (k < kinds.size() && qs.user_context != &kinds[k]) ++k;
      if (k == kinds.size()) {
        CHECK(false, "a status with an unknown user_context %p (%s)",
              qs.user_context, qs.error.get_str());
        continue;
      }
      ++seen[k];
      std::printf("rank %d: must-fail %s: %s\n", g_rank, kinds[k].name,
                  qs.error.get_str());
      CHECK(
          qs.error == lci::errorcode_t::fatal_peer_failure && qs.rank == victim,
          "the %s to the victim completed with %s, rank %d", kinds[k].name,
          qs.error.get_str(), qs.rank);
    }
    for (size_t k = 0; k < kinds.size(); ++k)
      CHECK(seen[k] == 1, "the %s to the victim completed %d times",
            kinds[k].name, seen[k]);
  }

  // posts naming the victim throw at once
  bool threw = false;
  try {
    lci::post_send(victim, sbuf.data(), 8, 1, lci::COMP_NULL_RETRY);
  } catch (const lci::peer_failure_error& e) {
    threw = e.failed_rank() == victim;
  }
  CHECK(threw, "a send to the victim did not throw peer_failure_error");

  // survivors still talk: a ring among them (a rank alone talks to itself)
  std::vector<int> alive;
  for (int r = 0; r < n; ++r)
    if (r != victim) alive.push_back(r);
  size_t me = 0;
  while (alive[me] != g_rank) ++me;
  const int next = alive[(me + 1) % alive.size()];
  const int prev = alive[(me + alive.size() - 1) % alive.size()];
  auto ring = [&](lci::device_t dev, const char* which) {
    for (size_t size : {size_t(8), size_t(4096), kRdvSize}) {
      std::vector<char> in(size), outb(size);
      for (size_t i = 0; i < size; ++i) outb[i] = pattern(g_rank, i);
      lci::comp_t rs = lci::alloc_sync();
      lci::comp_t ss = lci::alloc_sync();
      lci::status_t r =
          lci::post_recv_x(prev, in.data(), size, kTagRing, rs).device(dev)();
      lci::status_t s = lci::post_send_x(next, outb.data(), size, kTagRing, ss)
                            .device(dev)
                            .allow_retry(false)();
      bool ok = true;
      if (s.is_posted() && !wait_for(ss, &out, bound, dev)) ok = false;
      CHECK(ok, "%s: ring send of %zu bytes to rank %d hangs", which, size,
            next);
      if (ok && r.is_posted() && !wait_for(rs, &out, bound, dev)) ok = false;
      CHECK(ok, "%s: ring receive of %zu bytes hangs", which, size);
      if (!ok) return;  // the completion objects may still be signalled
      bool same = true;
      for (size_t i = 0; i < size; ++i)
        if (in[i] != static_cast<char>(pattern(prev, i))) same = false;
      CHECK(same, "%s: %zu bytes from rank %d differ", which, size, prev);
      lci::free_comp(&rs);
      lci::free_comp(&ss);
    }
  };
  ring(dev2, "second device");
  if (ring_default) ring(lci::device_t(), "default device");
  // the ANY_SOURCE receive is matched by a survivor
  int64_t word = g_rank;
  st = lci::post_send_x(next, &word, sizeof(word), kTagAny, lci::COMP_NULL)
           .matching_policy(lci::matching_policy_t::tag_only)();
  CHECK(wait_for(s_any, &out, bound), "the ANY_SOURCE receive hangs");
  int64_t got = -1;
  std::memcpy(&got, any_buf.data(), sizeof(got));
  CHECK(out.is_done() && out.rank == prev && got == prev,
        "ANY_SOURCE receive: %s from rank %d, value %lld", out.error.get_str(),
        out.rank, static_cast<long long>(got));

  lci::free_comp(&s_recv);
  lci::free_comp(&s_rdv);
  lci::free_comp(&s_rdvin);
  lci::free_comp(&s_put);
  lci::free_comp(&s_put2);
  lci::free_comp(&s_net);
  lci::free_comp(&s_any);
  lci::free_comp(&s_coll);
  lci::free_comp(&q);
  lci::deregister_rcomp(rcomp);
  lci::free_comp(&am_cq);
  lci::deregister_memory(&mr);
  int64_t f0 = realtime_ns();
  lci::free_device(&dev3);
  lci::free_device(&dev2);
  double fdev = seconds_since(f0);
  CHECK(fdev <= bound, "free_device took %.3f s", fdev);
  f0 = realtime_ns();
  lci::g_runtime_fina();
  double fina = seconds_since(f0);
  CHECK(fina <= bound, "g_runtime_fina took %.3f s", fina);
  std::printf("rank %d: fina_ms=%.1f failures=%d\n", g_rank, fina * 1000,
              g_failures.load());
  return g_failures == 0 ? 0 : 1;
}
