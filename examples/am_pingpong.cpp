// Active-message ping-pong between rank 0 and every other rank, completed at
// the target in two ways: a handler (a function the progress engine calls
// for each arriving message) and a completion queue (the message is queued
// and a thread pops it). The payload of each reply is the request's, with
// its counter incremented, so every round checks the data.
//
//   lcrun -n 2 ./am_pingpong [--rounds N]
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <lci.hpp>

namespace
{

struct msg_t {
  int from;
  int round;
};

int g_rounds = 200;
// handler mode: the handler records what arrived; the main loop replies
std::atomic<int> g_arrived{0};
msg_t g_last{};

void on_am(lci::status_t status)
{
  std::memcpy(&g_last, status.buffer, sizeof(g_last));
  // the buffer comes from the runtime's allocator (std::malloc by default)
  std::free(status.buffer);
  g_arrived.fetch_add(1, std::memory_order_release);
}

void send_am(int peer, const msg_t& m, lci::rcomp_t rcomp)
{
  lci::status_t s;
  do {
    s = lci::post_am(peer, const_cast<msg_t*>(&m), sizeof(m), lci::COMP_NULL,
                     rcomp);
    if (s.is_retry()) lci::progress();
  } while (s.is_retry());
}

// Waits for the next message: with a handler, until the handler counted
// one more; with a queue, until cq_pop returns one.
msg_t receive(lci::comp_t cq, int* seen)
{
  msg_t m{};
  if (cq.is_empty()) {
    while (g_arrived.load(std::memory_order_acquire) == *seen) lci::progress();
    ++*seen;
    m = g_last;
  } else {
    lci::status_t s;
    do {
      lci::progress();
      s = lci::cq_pop(cq);
    } while (s.is_retry());
    std::memcpy(&m, s.buffer, sizeof(m));
    std::free(s.buffer);
  }
  return m;
}

int play(bool use_cq)
{
  const int rank = lci::get_rank_me(), n = lci::get_rank_n();
  lci::comp_t comp = use_cq ? lci::alloc_cq() : lci::alloc_handler(on_am);
  // register_rcomp is collective: every rank gets the same handle
  lci::rcomp_t rcomp = lci::register_rcomp(comp);
  // counted before the barrier: the first request may arrive during it
  int seen = g_arrived.load();
  lci::barrier();
  lci::comp_t cq = use_cq ? comp : lci::comp_t();
  int errors = 0;
  for (int peer = 1; peer < n; ++peer) {
    for (int round = 0; round < g_rounds; ++round) {
      if (rank == 0) {
        send_am(peer, msg_t{0, round}, rcomp);
        msg_t back = receive(cq, &seen);
        if (back.from != peer || back.round != round + 1) ++errors;
      } else if (rank == peer) {
        msg_t got = receive(cq, &seen);
        if (got.from != 0 || got.round != round) ++errors;
        send_am(0, msg_t{rank, got.round + 1}, rcomp);
      }
    }
  }
  lci::barrier();
  lci::deregister_rcomp(rcomp);
  lci::free_comp(&comp);
  std::printf("am_pingpong: rank %d of %d: %d rounds with a %s, %d errors\n",
              rank, n, rank == 0 ? g_rounds * (n - 1) : g_rounds,
              use_cq ? "completion queue" : "handler", errors);
  return errors;
}

}  // namespace

int main(int argc, char** argv)
{
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      g_rounds = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: am_pingpong [--rounds N]\n");
      return 2;
    }
  }
  lci::g_runtime_init();
  int errors = play(false) + play(true);
  lci::g_runtime_fina();
  return errors == 0 ? 0 : 1;
}
