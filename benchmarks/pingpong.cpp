// Ping-pong between rank 0 and rank 1 with post_send / post_recv: prints
// the half round-trip latency and round trips per second as one CSV row per
// size. The first --warmup iterations are not timed.
//
//   lcrun -n 2 ./lci_pingpong [--size BYTES] [--iters N] [--warmup N]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <lci.hpp>
#include <string>
#include <vector>

namespace
{

struct options_t {
  std::vector<size_t> sizes = {8};
  long iters = 100000;
  long warmup = 10000;
};

options_t parse(int argc, char** argv)
{
  options_t o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--size" && i + 1 < argc) {
      o.sizes = {std::strtoull(argv[++i], nullptr, 10)};
    } else if (a == "--iters" && i + 1 < argc) {
      o.iters = std::atol(argv[++i]);
    } else if (a == "--warmup" && i + 1 < argc) {
      o.warmup = std::atol(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: %s [--size BYTES] [--iters N] [--warmup N]\n",
                   argv[0]);
      std::exit(a == "--help" ? 0 : 2);
    }
  }
  return o;
}

void recv_one(int peer, void* buf, size_t size, lci::comp_t sync)
{
  lci::status_t s = lci::post_recv(peer, buf, size, 0, sync);
  while (s.is_retry()) {
    lci::progress();
    s = lci::post_recv(peer, buf, size, 0, sync);
  }
  if (s.is_done()) return;
  while (!lci::sync_test(sync, nullptr)) lci::progress();
}

void send_one(int peer, void* buf, size_t size)
{
  while (lci::post_send(peer, buf, size, 0, lci::COMP_NULL_RETRY).is_retry())
    lci::progress();
}

}  // namespace

int main(int argc, char** argv)
{
  options_t o = parse(argc, argv);
  lci::g_runtime_init();
  int rank = lci::get_rank_me();
  if (lci::get_rank_n() != 2) {
    if (rank == 0) std::fprintf(stderr, "lci_pingpong needs 2 ranks\n");
    lci::g_runtime_fina();
    return 2;
  }
  int peer = 1 - rank;
  lci::comp_t sync = lci::alloc_sync();
  if (rank == 0)
    std::printf(
        "benchmark,library,mode,processes,threads,size,iterations,"
        "half_rtt_us,round_trips_per_s\n");
  for (size_t size : o.sizes) {
    std::vector<char> buf(size > 0 ? size : 1, 'x');
    std::chrono::steady_clock::time_point t0;
    for (long i = 0; i < o.warmup + o.iters; ++i) {
      if (i == o.warmup) t0 = std::chrono::steady_clock::now();
      if (rank == 0) {
        send_one(peer, buf.data(), size);
        recv_one(peer, buf.data(), size, sync);
      } else {
        recv_one(peer, buf.data(), size, sync);
        send_one(peer, buf.data(), size);
      }
    }
    double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    if (rank == 0)
      std::printf("pingpong,lci,process,2,1,%zu,%ld,%.3f,%.0f\n", size, o.iters,
                  secs / o.iters / 2 * 1e6, o.iters / secs);
  }
  lci::free_comp(&sync);
  lci::g_runtime_fina();
  return 0;
}
