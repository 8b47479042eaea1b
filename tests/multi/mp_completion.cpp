// Multi-process check of the completion semantics (run with lcrun -n 2):
//
// 1. comp_semantic network on shm is delivery-complete: rank 0 sends on a
//    second device while rank 1 makes no progress on that device; the
//    completion must not come until rank 1 has processed the message (on
//    tcp only the eventual completion is checked: rxm completes eager sends
//    once written to the socket, see docs/ARCHITECTURE.md).
// 2. Both ranks exchange active messages built in user packets, with both
//    completion semantics, whose local completion is a counter and whose
//    remote completion is a counter or a user completion object, plus
//    send/recv pairs carrying user_context; every byte and every completion
//    count is checked, then wait_drained.
// Exit status 0 on success.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <lci.hpp>
#include <mutex>
#include <string>
#include <vector>

#include "mp_check.hpp"

namespace
{

using mp::g_failures;
using mp::g_rank;

unsigned char pattern(int src, lci::tag_t tag, size_t i)
{
  return static_cast<unsigned char>(src * 71 + tag * 13 + i * 7 + 3);
}

void fill(void* p, size_t size, int src, lci::tag_t tag)
{
  auto* b = static_cast<unsigned char*>(p);
  for (size_t i = 0; i < size; ++i) b[i] = pattern(src, tag, i);
}

bool verify(const void* p, size_t size, int src, lci::tag_t tag)
{
  auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < size; ++i)
    if (b[i] != pattern(src, tag, i)) return false;
  return true;
}

// Waits (driving progress on dev) until pred() holds; false after 60 s.
template <typename P>
bool wait_for(P pred, lci::device_t dev)
{
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    lci::progress_x().device(dev)();
  }
  return true;
}

// A user completion object: checks every arriving active message.
class am_checker_t : public lci::comp_impl_t
{
 public:
  void signal(lci::status_t s) override
  {
    bool ok = s.is_done() && s.user_context == nullptr &&
              verify(s.buffer, s.size, s.rank, s.tag);
    std::free(s.buffer);
    std::lock_guard<std::mutex> g(mu_);
    ++n_;
    if (!ok) ++bad_;
  }
  int n()
  {
    std::lock_guard<std::mutex> g(mu_);
    return n_;
  }
  int bad()
  {
    std::lock_guard<std::mutex> g(mu_);
    return bad_;
  }

 private:
  std::mutex mu_;
  int n_ = 0, bad_ = 0;
};

// Part 1: delivery completion.
void check_network_completion(lci::device_t dev_b, lci::rcomp_t go_rcomp,
                              lci::comp_t go_counter, bool shm)
{
  const int peer = 1 - g_rank;
  const size_t size = 200;
  const lci::tag_t tag = 77;
  lci::device_t dev_a = lci::get_default_device();
  // warm up device B in both directions while both ranks progress it: the
  // providers set up the connection to a peer (shm maps its region) only
  // with the peer's help
  {
    char w = 0, r = 0;
    lci::status_t s =
        lci::post_send_x(peer, &w, 1, 1, lci::COMP_NULL).device(dev_b)();
    CHECK(s.is_done(), "warm-up send returned %s", s.error.get_str());
    s = lci::post_recv_x(peer, &r, 1, 1, lci::COMP_NULL).device(dev_b)();
    CHECK(s.is_done(), "warm-up recv returned %s", s.error.get_str());
    lci::wait_drained_x().device(dev_b)();
  }
  // rank 1 says when it has stopped progressing device B
  if (g_rank == 1) {
    char ready = 1;
    mp::post_retrying(
        [&] {
          return lci::post_am_x(peer, &ready, 1, lci::COMP_NULL_RETRY, go_rcomp)
              .device(dev_a)();
        },
        dev_a);
  } else {
    CHECK(wait_for([&] { return lci::counter_get(go_counter) >= 1; }, dev_a),
          "rank 1 never got ready");
  }
  if (g_rank == 0) {
    std::vector<unsigned char> out(size);
    fill(out.data(), size, 0, tag);
    lci::comp_t sync = lci::alloc_sync();
    auto send = [&] {
      return lci::post_send_x(peer, out.data(), size, tag, sync)
          .device(dev_b)
          .comp_semantic(lci::comp_semantic_t::network)();
    };
    // for 300 ms rank 1 makes no progress on device B (on tcp the first
    // send may wait for the connection, which needs rank 1: keep trying)
    lci::status_t s(lci::errorcode_t::retry);
    bool early = false;
    lci::status_t c;
    auto end =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
    while (std::chrono::steady_clock::now() < end && !early) {
      if (s.is_retry()) s = send();
      lci::progress_x().device(dev_b)();
      if (s.is_posted()) early = lci::sync_test(sync, &c);
    }
    if (shm) {
      CHECK(s.is_posted(), "network send returned %s", s.error.get_str());
      CHECK(!early,
            "the network completion came before the target processed the "
            "message");
    }
    // tell rank 1 to receive
    char go = 1;
    mp::post_retrying(
        [&] {
          return lci::post_am_x(peer, &go, 1, lci::COMP_NULL_RETRY, go_rcomp)
              .device(dev_a)();
        },
        dev_a);
    if (s.is_retry()) s = mp::post_retrying(send, dev_b);
    CHECK(s.is_posted(), "network send returned %s", s.error.get_str());
    if (!early)
      CHECK(wait_for([&] { return lci::sync_test(sync, &c); }, dev_b),
            "the network completion never came");
    CHECK(
        c.is_done() && c.tag == tag && c.size == size && c.buffer == out.data(),
        "network completion status");
    lci::free_comp(&sync);
  } else {
    CHECK(wait_for([&] { return lci::counter_get(go_counter) >= 1; }, dev_a),
          "no go message");
    std::vector<unsigned char> in(size);
    lci::status_t r =
        lci::post_recv_x(peer, in.data(), size, tag, lci::COMP_NULL)
            .device(dev_b)();
    CHECK(r.is_done() && r.size == size && verify(in.data(), size, 0, tag),
          "message of the network send");
  }
  lci::wait_drained_x().device(dev_b)();
  lci::wait_drained_x().device(dev_a)();
}

// Part 2: both ranks exchange user-packet active messages and send/recv.
void exchange(lci::rcomp_t counter_rcomp, lci::comp_t remote_counter,
              lci::rcomp_t checker_rcomp, am_checker_t& checker)
{
  const int peer = 1 - g_rank;
  lci::device_t dev = lci::get_default_device();
  const size_t inject = lci::get_g_runtime().get_attr_max_inject_size();
  const std::vector<size_t> sizes = {
      0, 1, 8, inject, inject + 1, 1000, lci::get_max_bcopy_size()};
  constexpr int kRounds = 30;
  lci::comp_t local = lci::alloc_counter();
  long posted = 0;
  int to_counter = 0, to_checker = 0;

  // receives, each with its own user_context
  const int nrecv = kRounds;
  std::vector<std::vector<unsigned char>> rbufs(
      nrecv, std::vector<unsigned char>(1000));
  lci::comp_t rcq = lci::alloc_cq();
  int recv_done_now = 0;
  std::vector<lci::status_t> recv_statuses;
  for (int i = 0; i < nrecv; ++i) {
    lci::status_t s = mp::post_retrying(
        [&] {
          return lci::post_recv_x(peer, rbufs[i].data(), 1000, 5000 + i, rcq)
              .device(dev)
              .user_context(&rbufs[i])();
        },
        dev);
    if (s.is_done()) {
      ++recv_done_now;
      recv_statuses.push_back(s);
    }
  }

  for (int round = 0; round < kRounds; ++round) {
    for (size_t k = 0; k < sizes.size(); ++k) {
      const lci::tag_t tag = round * 100 + k;
      const bool network = (round + k) % 2 == 0;
      const bool checked = k % 2 == 0;
      void* up = nullptr;
      CHECK(wait_for([&] { return (up = lci::get_upacket()) != nullptr; }, dev),
            "no user packet");
      fill(up, sizes[k], g_rank, tag);
      lci::status_t s = mp::post_retrying(
          [&] {
            return lci::post_am_x(peer, up, sizes[k], local,
                                  checked ? checker_rcomp : counter_rcomp)
                .tag(tag)
                .device(dev)
                .comp_semantic(network ? lci::comp_semantic_t::network
                                       : lci::comp_semantic_t::memory)();
          },
          dev);
      CHECK(network ? s.is_posted() : s.is_done(), "am returned %s",
            s.error.get_str());
      if (s.is_posted()) ++posted;
      (checked ? to_checker : to_counter) += 1;
    }
    // a send with user_context through allow_done(false)
    std::vector<unsigned char> out(1000);
    fill(out.data(), out.size(), g_rank, 5000 + round);
    lci::status_t s = mp::post_retrying(
        [&] {
          return lci::post_send_x(peer, out.data(), out.size(), 5000 + round,
                                  local)
              .device(dev)
              .allow_done(false)();
        },
        dev);
    CHECK(s.is_posted(), "allow_done(false) send returned %s",
          s.error.get_str());
    ++posted;
  }

  CHECK(wait_for(
            [&] {
              lci::status_t r = lci::cq_pop(rcq);
              if (r.is_done()) recv_statuses.push_back(r);
              return lci::counter_get(local) >= posted &&
                     lci::counter_get(remote_counter) >= to_counter &&
                     checker.n() >= to_checker &&
                     static_cast<int>(recv_statuses.size()) >= nrecv;
            },
            dev),
        "timed out: local %ld/%ld, counter %ld/%d, checker %d/%d, recvs %zu/%d",
        static_cast<long>(lci::counter_get(local)), posted,
        static_cast<long>(lci::counter_get(remote_counter)), to_counter,
        checker.n(), to_checker, recv_statuses.size(), nrecv);
  lci::wait_drained_x().device(dev)();
  CHECK(lci::test_drained_x().device(dev)().is_done(), "not drained");
  CHECK(lci::counter_get(local) == posted, "local completions %ld vs %ld",
        static_cast<long>(lci::counter_get(local)), posted);
  CHECK(checker.bad() == 0, "%d bad active messages", checker.bad());
  std::vector<int> seen(nrecv, 0);
  for (const lci::status_t& r : recv_statuses) {
    int i = static_cast<int>(r.tag) - 5000;
    CHECK(i >= 0 && i < nrecv, "recv tag %llu",
          static_cast<unsigned long long>(r.tag));
    if (i < 0 || i >= nrecv) continue;
    ++seen[i];
    CHECK(r.user_context == &rbufs[i], "recv %d user_context", i);
    CHECK(r.buffer == rbufs[i].data() && r.size == 1000 &&
              verify(r.buffer, r.size, peer, r.tag),
          "recv %d payload", i);
  }
  for (int i = 0; i < nrecv; ++i)
    CHECK(seen[i] == 1, "recv %d completed %d times", i, seen[i]);
  (void)recv_done_now;
  lci::free_comp(&rcq);
  lci::free_comp(&local);
}

}  // namespace

int main()
{
  try {
    lci::g_runtime_init();
    g_rank = lci::get_rank_me();
    if (lci::get_rank_n() != 2) {
      std::fprintf(stderr, "mp_completion: run with 2 ranks\n");
      return 2;
    }
    const bool shm = lci::get_g_runtime().get_attr_ofi_provider_name() == "shm";
    // remote completions: registered in the same order on both ranks
    lci::comp_t go_counter = lci::alloc_counter();
    lci::rcomp_t go_rcomp = lci::register_rcomp(go_counter);
    lci::comp_t remote_counter = lci::alloc_counter();
    lci::rcomp_t counter_rcomp = lci::register_rcomp(remote_counter);
    am_checker_t checker;
    lci::rcomp_t checker_rcomp = lci::register_rcomp(lci::comp_t(&checker));
    lci::device_t dev_b = lci::alloc_device();

    check_network_completion(dev_b, go_rcomp, go_counter, shm);
    exchange(counter_rcomp, remote_counter, checker_rcomp, checker);

    lci::free_device(&dev_b);
    lci::deregister_rcomp(checker_rcomp);
    lci::deregister_rcomp(counter_rcomp);
    lci::deregister_rcomp(go_rcomp);
    lci::free_comp(&remote_counter);
    lci::free_comp(&go_counter);
    std::printf("mp_completion: rank %d (%s): %s (%d failures)\n", g_rank,
                shm ? "shm" : "tcp", g_failures ? "FAILED" : "ok",
                g_failures.load());
    lci::g_runtime_fina();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mp_completion: rank %d: %s\n", g_rank, e.what());
    return 1;
  }
  return g_failures ? 1 : 0;
}
