// Message rate: 8-byte (by default) ping-pong between pairs of threads,
// printing one CSV row with the median, min and max of the runs in
// messages per second (both directions counted).
//
// With an even number of ranks, thread t of rank r plays ping-pong with
// thread t of rank r^1, each on its own device. With one rank, each thread
// plays against itself through loopback (sends to its own rank on its own
// device and receives the message there), so T threads do the work of T
// processes with no data shared between threads unless the device is;
// --pairs instead pairs thread 2i with thread 2i+1 (each progresses its own
// device and sends on its peer's, since a message lands on the device of
// the same index: the two threads then contend for each other's devices).
// --self makes every rank's threads play against themselves with several
// ranks too: `lcrun -n 2 ./lci_msgrate --self` is the process-based twin of
// `./lci_msgrate --threads 2` (same work per core, separate processes).
// The rate counts messages delivered per second, job-wide.
//
//   lcrun -n 2 ./lci_msgrate                    2 processes x 1 thread
//   ./lci_msgrate --threads 2                   1 process x 2 threads, a
//                                               device per thread
//   ./lci_msgrate --threads 2 --shared-device   ... one device for both
//   lcrun -n 2 ./lci_msgrate --busy-owner 100   "inattentive owner" case
//
// --busy-owner US: each rank has a communicating thread and an owner thread
// that sleeps US microseconds between progress calls on its device; the
// devices are crossed so every message lands on the device of the peer's
// busy owner. Run it with LCI_ATTR_ATTENTIVE_PROGRESS=0 and =1 to see what
// attentive progress changes.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <lci.hpp>
#include <string>
#include <thread>
#include <vector>

namespace
{

struct options_t {
  int threads = 1;
  size_t size = 8;
  long iters = 50000;  // round trips per pair per run
  long warmup = 2000;
  int runs = 5;
  bool shared_device = false;
  long busy_owner_us = -1;  // < 0: off
  bool pairs = false;       // one rank: thread pairs instead of self-play
  bool self = false;        // several ranks: self-play instead of ping-pong
};

options_t parse(int argc, char** argv)
{
  options_t o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() { return i + 1 < argc ? argv[++i] : (char*)"0"; };
    if (a == "--threads") {
      o.threads = std::atoi(next());
    } else if (a == "--size") {
      o.size = std::strtoull(next(), nullptr, 10);
    } else if (a == "--iters") {
      o.iters = std::atol(next());
    } else if (a == "--warmup") {
      o.warmup = std::atol(next());
    } else if (a == "--runs") {
      o.runs = std::atoi(next());
    } else if (a == "--shared-device") {
      o.shared_device = true;
    } else if (a == "--self") {
      o.self = true;
    } else if (a == "--pairs") {
      o.pairs = true;
    } else if (a == "--busy-owner") {
      o.busy_owner_us = std::atol(next());
    } else {
      std::fprintf(
          stderr,
          "usage: %s [--threads T] [--size B] [--iters N] "
          "[--warmup N] [--runs R] [--shared-device] [--pairs] [--self] "
          "[--busy-owner US]\n",
          argv[0]);
      std::exit(a == "--help" ? 0 : 2);
    }
  }
  return o;
}

// Post until accepted, progressing `dev` in between.
template <typename Op>
lci::status_t post(const Op& op, lci::device_t dev)
{
  for (;;) {
    lci::status_t s = op();
    if (!s.is_retry()) return s;
    lci::progress_x().device(dev)();
  }
}

// `iters` round trips with the peer thread; the initiator sends first.
// Sends go out on `send_dev`; incoming messages land on `dev`, which this
// thread progresses. (A message arrives on the device with the same index as
// the one it was sent from, so in loopback a thread sends on its peer's
// device.)
void pingpong(lci::device_t dev, lci::device_t send_dev, int peer_rank,
              lci::tag_t my_tag, lci::tag_t peer_tag, bool initiator,
              size_t size, long iters)
{
  std::vector<char> sbuf(size > 0 ? size : 1, 's'), rbuf(sbuf.size());
  lci::comp_t sync = lci::alloc_sync();
  auto send = [&] {
    post(lci::post_send_x(peer_rank, sbuf.data(), size, my_tag,
                          lci::COMP_NULL_RETRY)
             .device(send_dev),
         dev);
  };
  auto recv = [&] {
    lci::status_t s =
        post(lci::post_recv_x(peer_rank, rbuf.data(), size, peer_tag, sync)
                 .device(dev),
             dev);
    if (s.is_done()) return;
    while (!lci::sync_test(sync, nullptr)) lci::progress_x().device(dev)();
  };
  for (long i = 0; i < iters; ++i) {
    if (initiator) {
      send();
      recv();
    } else {
      recv();
      send();
    }
  }
  lci::free_comp(&sync);
}

// `iters` messages to itself: send on `dev` to this rank, receive on `dev`.
void selfplay(lci::device_t dev, int me, lci::tag_t tag, size_t size,
              long iters)
{
  std::vector<char> sbuf(size > 0 ? size : 1, 's'), rbuf(sbuf.size());
  lci::comp_t sync = lci::alloc_sync();
  for (long i = 0; i < iters; ++i) {
    post(lci::post_send_x(me, sbuf.data(), size, tag, lci::COMP_NULL_RETRY)
             .device(dev),
         dev);
    lci::status_t s = post(
        lci::post_recv_x(me, rbuf.data(), size, tag, sync).device(dev), dev);
    if (s.is_done()) continue;
    while (!lci::sync_test(sync, nullptr)) lci::progress_x().device(dev)();
  }
  lci::free_comp(&sync);
}

}  // namespace

int main(int argc, char** argv)
{
  options_t o = parse(argc, argv);
  lci::g_runtime_init();
  const int rank = lci::get_rank_me();
  const int nranks = lci::get_rank_n();
  const bool busy = o.busy_owner_us >= 0;
  if (busy) o.threads = 1;
  const bool self = ((nranks == 1 && !o.pairs) || o.self) && !busy;
  if ((nranks == 1 && o.pairs && o.threads % 2 != 0) ||
      (nranks > 1 && !self && nranks % 2) || (busy && nranks != 2)) {
    if (rank == 0)
      std::fprintf(stderr,
                   "lci_msgrate: --pairs needs an even thread count; "
                   "several ranks need an even rank count (--busy-owner: "
                   "2 ranks)\n");
    lci::g_runtime_fina();
    return 2;
  }

  // devices: one per thread (allocated here, in the same order on every
  // rank), or the default one; --busy-owner allocates two and crosses them
  std::vector<lci::device_t> devs;
  int ndev = busy ? 2 : (o.shared_device ? 0 : o.threads);
  for (int i = 0; i < ndev; ++i) devs.push_back(lci::alloc_device());
  auto device_of = [&](int t) {
    if (busy) return devs[rank];  // rank 0 sends on 0, rank 1 on 1
    return o.shared_device ? lci::get_default_device() : devs[t];
  };

  std::vector<double> rates;
  for (int run = -1; run < o.runs; ++run) {
    long iters = run < 0 ? o.warmup : o.iters;
    std::atomic<bool> stop_owner{false};
    std::thread owner;
    if (busy)  // owns the other device; attends to it only now and then
      owner = std::thread([&] {
        lci::device_t mine = devs[1 - rank];
        while (!stop_owner.load()) {
          std::this_thread::sleep_for(
              std::chrono::microseconds(o.busy_owner_us));
          lci::progress_x().device(mine)();
        }
      });
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> ts;
    for (int t = 0; t < o.threads; ++t)
      ts.emplace_back([&, t] {
        if (self) {
          selfplay(device_of(t), rank, t, o.size, iters);
          return;
        }
        int peer_rank = nranks == 1 ? 0 : (rank ^ 1);
        int peer_thread = nranks == 1 ? (t ^ 1) : t;
        bool initiator = nranks == 1 ? (t % 2 == 0) : (rank % 2 == 0);
        lci::tag_t my_tag = nranks == 1 ? t : 0;
        lci::tag_t peer_tag = nranks == 1 ? peer_thread : 0;
        if (nranks > 1) my_tag = peer_tag = t;
        lci::device_t send_dev =
            nranks == 1 ? device_of(peer_thread) : device_of(t);
        pingpong(device_of(t), send_dev, peer_rank, my_tag, peer_tag, initiator,
                 o.size, iters);
      });
    for (auto& th : ts) th.join();
    double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    stop_owner = true;
    if (owner.joinable()) owner.join();
    // messages this process's threads received and sent: 2 per round trip
    // per thread, counted once per pair across the job
    // (self-play with several ranks: rank 0's rate times the rank count; the
    // ranks do the same work and start together after the collective init)
    double msgs = self ? 1.0 * iters * o.threads * nranks
                       : 2.0 * iters * o.threads * nranks / 2.0;
    if (run >= 0) rates.push_back(msgs / secs);
  }
  std::sort(rates.begin(), rates.end());
  if (rank == 0) {
    std::string mode = busy                           ? "busy-owner"
                       : nranks > 1 && o.threads == 1 ? "process"
                       : o.shared_device              ? "thread-shared-device"
                                         : "thread-dedicated-device";
    if (self)
      mode += "-self";
    else if (nranks == 1)
      mode += "-pairs";
    std::printf(
        "benchmark,library,mode,processes,threads,size,iterations,median,min,"
        "max,unit\n");
    std::printf("msgrate,lci,%s,%d,%d,%zu,%ld,%.0f,%.0f,%.0f,msgs/s\n",
                mode.c_str(), nranks, o.threads, o.size, o.iters,
                rates[rates.size() / 2], rates.front(), rates.back());
  }
  for (auto& d : devs) lci::free_device(&d);
  lci::g_runtime_fina();
  return 0;
}
