// The point-to-point benchmark engine shared by our programs and the MPI
// twin: options, pairing of threads, the traffic patterns, timing, and the
// CSV rows. A library plugs in as a "transport" (lci_transport.hpp,
// mpi/mpi_transport.hpp), so both sides run the very same patterns.
//
// Pairing (as in the paper's Section 5.2): with an even number of ranks,
// thread t of rank r plays against thread t of rank r^1. With one rank each
// thread plays against itself through loopback (--pairs: thread 2i against
// thread 2i+1); --self makes every rank's threads play against themselves
// with several ranks too.
//
// Patterns (W = --window), one iteration:
//   pingpong (msgrate, latency): the initiator (and a self-playing thread)
//     posts W receives, sends W messages, waits for the W replies; the
//     responder posts W receives, waits for them, sends W back.
//   stream (bandwidth): the initiator sends W messages and waits for an
//     8-byte acknowledgement; the responder receives W, then acknowledges.
//     A self-playing thread posts W receives, sends W, waits.
//
// The transport interface (a class T):
//   const char* library();  int rank();  int nranks();
//   std::string thread_mode(bool shared);      "dedicated-device", ...
//   std::string mode_override();               "" or a special mode name
//   void setup(const options_t&);              collective
//   std::unique_ptr<typename T::channel_t> make_channel(const options_t&,
//       const lane_t&, size_t max_size);       on the main thread
//   bool supports(const options_t&, size_t size, std::string* why);
//   bool must_support(size_t size);            a skip there is an error
//   std::string protocol(size_t size);         "inject", "eager", ... or "-"
//   void before_run();  void after_run();
//   void quiesce();                            collective, after the runs
//   void teardown();                           collective, channels freed
// and a channel (one per thread, used by that thread only):
//   void post_recvs(long n, size_t size);      receives for n messages
//   void wait_recvs(long n);                   until n messages arrived
//   void send_n(long n, size_t size);          n sends, buffers reusable
//   void keep_progress();                      one step of progress for the
//                                              peers' operations on this
//                                              channel's resources
#ifndef LCI_BENCHMARKS_COMMON_SUITE_HPP
#define LCI_BENCHMARKS_COMMON_SUITE_HPP

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cli.hpp"

namespace bench
{

enum class kind_t { msgrate, bandwidth, latency };

inline const char* kind_name(kind_t k)
{
  return k == kind_t::msgrate     ? "msgrate"
         : k == kind_t::bandwidth ? "bandwidth"
                                  : "latency";
}

struct options_t {
  kind_t kind = kind_t::msgrate;
  int threads = 1;
  bool shared = false;  // threads share one device / communicator
  bool pairs = false;   // one rank: thread 2i against thread 2i+1
  bool self = false;    // several ranks: every thread against itself
  std::string op = "sendrecv";
  long window = 1;
  std::vector<size_t> sizes;
  long iters = 0;   // per run, scaled down above kScaleFrom bytes
  long warmup = 0;  // iterations of the untimed first run
  int runs = 5;
  bool pin = false;
};

// Above this size the iteration counts shrink in proportion, so a run of a
// large size moves about as many bytes as one of kScaleFrom bytes.
constexpr size_t kScaleFrom = 16384;
constexpr long kMinIters = 2;
constexpr size_t kAckSize = 8;

inline long scaled_iters(long iters, size_t size)
{
  if (size <= kScaleFrom || iters <= 0) return iters;
  long v = static_cast<long>(static_cast<double>(iters) * kScaleFrom / size);
  return std::max(std::min(v, iters), std::min(iters, kMinIters));
}

inline options_t default_options(kind_t kind)
{
  options_t o;
  o.kind = kind;
  switch (kind) {
    case kind_t::msgrate:
      o.sizes = {8};
      o.window = 1;
      o.iters = 50000;
      o.warmup = 2000;
      break;
    case kind_t::bandwidth:
      parse_size_list("16:16M:4", &o.sizes);
      o.window = 64;
      o.iters = 1000;
      o.warmup = 100;
      break;
    case kind_t::latency:
      parse_size_list("8,64,512,4K,8K,16K,64K,256K,1M", &o.sizes);
      o.window = 1;
      o.iters = 10000;
      o.warmup = 1000;
      break;
  }
  return o;
}

// Declares the options every program shares; `shared_flag` is the name of
// the "threads share one device/communicator" flag, `ops` the valid --op
// values of this library.
inline void add_common_options(cli_t& cli, options_t& o,
                               const char* shared_flag,
                               std::vector<std::string> ops)
{
  cli.add("--threads", &o.threads, "threads per rank");
  cli.flag(shared_flag, &o.shared, "threads share one device/communicator");
  cli.flag("--pairs", &o.pairs,
           "one rank: thread 2i plays against thread 2i+1 (default: each "
           "thread against itself)");
  cli.flag("--self", &o.self,
           "several ranks: each thread plays against itself");
  cli.add("--op", &o.op, "communication operation", ops);
  cli.add("--window", &o.window, "messages in flight per iteration");
  cli.add("--sizes", &o.sizes,
          "message sizes in bytes: list 8,1K,... or range FROM:TO[:FACTOR]");
  cli.add_custom("--size", "BYTES", "one message size (same as --sizes B)", "",
                 [&o](const char* v) {
                   size_t s;
                   if (!parse_size(v, &s)) return false;
                   o.sizes = {s};
                   return true;
                 });
  cli.add("--iters", &o.iters,
          "iterations per timed run (scaled down above 16 KiB)");
  cli.add("--warmup", &o.warmup, "iterations of the untimed warm-up run");
  cli.add("--runs", &o.runs, "timed runs per size (median, min, max)");
  cli.flag("--pin", &o.pin,
           "pin thread t of rank r to cpu (r * threads + t) mod ncpus");
}

// One thread's side of a pair.
struct lane_t {
  int thread = 0;
  int peer_rank = 0;
  int peer_thread = 0;
  bool initiator = true;  // sends first
  bool self = false;      // plays against itself
};

// Checks the pairing options; returns an error message or "".
inline std::string check_topology(const options_t& o, int nranks)
{
  if (o.threads < 1) return "--threads must be at least 1";
  if (o.window < 1) return "--window must be at least 1";
  if (o.runs < 1) return "--runs must be at least 1";
  if (o.iters < 1 || o.warmup < 0) return "--iters >= 1, --warmup >= 0";
  if (nranks == 1 && o.pairs && o.threads % 2)
    return "--pairs needs an even thread count";
  if (nranks > 1 && !o.self && nranks % 2)
    return "several ranks need an even rank count (or --self)";
  return "";
}

inline bool plays_self(const options_t& o, int nranks)
{
  return (nranks == 1 && !o.pairs) || o.self;
}

inline lane_t make_lane(const options_t& o, int rank, int nranks, int t)
{
  lane_t l;
  l.thread = t;
  l.self = plays_self(o, nranks);
  if (l.self) {
    l.peer_rank = rank;
    l.peer_thread = t;
  } else if (nranks == 1) {
    l.peer_rank = 0;
    l.peer_thread = t ^ 1;
    l.initiator = t % 2 == 0;
  } else {
    l.peer_rank = rank ^ 1;
    l.peer_thread = t;
    l.initiator = rank % 2 == 0;
  }
  return l;
}

inline void pin_self(int cpu_index)
{
  unsigned n = std::thread::hardware_concurrency();
  if (n == 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(static_cast<unsigned>(cpu_index) % n, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

template <typename C>
void run_pattern(kind_t kind, C& ch, const lane_t& l, size_t size, long window,
                 long iters)
{
  for (long i = 0; i < iters; ++i) {
    if (kind != kind_t::bandwidth || l.self) {
      if (l.self || l.initiator) {
        ch.post_recvs(window, size);
        ch.send_n(window, size);
        ch.wait_recvs(window);
      } else {
        ch.post_recvs(window, size);
        ch.wait_recvs(window);
        ch.send_n(window, size);
      }
    } else if (l.initiator) {
      ch.post_recvs(1, kAckSize);
      ch.send_n(window, size);
      ch.wait_recvs(1);
    } else {
      ch.post_recvs(window, size);
      ch.wait_recvs(window);
      ch.send_n(1, kAckSize);
    }
  }
}

// Median of sorted values (the mean of the middle two for an even count).
inline double median_of_sorted(const std::vector<double>& v)
{
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

inline void print_header()
{
  std::printf(
      "benchmark,library,mode,processes,threads,size,iterations,median,min,"
      "max,unit,op,window,protocol\n");
}

// Runs the benchmark `o.kind` over `o.sizes` with transport `tr` (already
// initialized); rank 0 prints the rows. Returns the exit status.
template <typename T>
int run_suite(T& tr, const options_t& o)
{
  const int rank = tr.rank(), nranks = tr.nranks();
  std::string err = check_topology(o, nranks);
  if (!err.empty()) {
    if (rank == 0)
      std::fprintf(stderr, "%s %s: %s\n", tr.library(), kind_name(o.kind),
                   err.c_str());
    return 2;
  }
  tr.setup(o);
  const bool self = plays_self(o, nranks);
  size_t max_size = kAckSize;
  for (size_t s : o.sizes) max_size = std::max(max_size, s);
  std::vector<lane_t> lanes;
  std::vector<std::unique_ptr<typename T::channel_t>> chans;
  for (int t = 0; t < o.threads; ++t) {
    lanes.push_back(make_lane(o, rank, nranks, t));
    chans.push_back(tr.make_channel(o, lanes.back(), max_size));
  }

  std::string mode = tr.mode_override();
  if (mode.empty()) {
    mode = nranks > 1 && o.threads == 1 ? "process"
                                        : "thread-" + tr.thread_mode(o.shared);
    if (self)
      mode += "-self";
    else if (nranks == 1)
      mode += "-pairs";
  }
  if (rank == 0) {
    if (o.pin)
      std::printf("# pinned: thread t of rank r on cpu (r*%d+t) mod %u\n",
                  o.threads, std::thread::hardware_concurrency());
    print_header();
    std::fflush(stdout);
  }

  int status = 0;
  for (size_t size : o.sizes) {
    std::string why;
    if (!tr.supports(o, size, &why)) {
      bool error = tr.must_support(size);
      if (rank == 0) {
        std::printf("# %s: %s %s %s size %zu: %s\n",
                    error ? "error" : "skipped", tr.library(),
                    kind_name(o.kind), o.op.c_str(), size, why.c_str());
        std::fflush(stdout);
      }
      if (error) status = 1;
      continue;
    }
    const long iters = scaled_iters(o.iters, size);
    const long warmup = scaled_iters(o.warmup, size);
    std::vector<double> values;
    for (int run = -1; run < o.runs; ++run) {
      long n = run < 0 ? warmup : iters;
      if (n == 0) continue;
      tr.before_run();
      double secs;
      if (o.threads == 1) {
        // on the main thread (MPI_THREAD_SINGLE allows nothing else)
        if (o.pin) pin_self(rank);
        auto t0 = std::chrono::steady_clock::now();
        run_pattern(o.kind, *chans[0], lanes[0], size, o.window, n);
        secs =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
                .count();
      } else {
        std::atomic<int> ready{0}, finished{0};
        std::atomic<bool> go{false};
        std::vector<std::thread> ts;
        for (int t = 0; t < o.threads; ++t)
          ts.emplace_back([&, t] {
            if (o.pin) pin_self(rank * o.threads + t);
            ready.fetch_add(1);
            while (!go.load(std::memory_order_acquire))
              std::this_thread::yield();
            run_pattern(o.kind, *chans[t], lanes[t], size, o.window, n);
            // a thread's resources may carry its peer thread's operations
            // (--pairs: each sends on the other's device): keep them going
            // until every thread is done
            finished.fetch_add(1);
            while (finished.load() < o.threads) chans[t]->keep_progress();
          });
        while (ready.load() < o.threads) std::this_thread::yield();
        auto t0 = std::chrono::steady_clock::now();
        go.store(true, std::memory_order_release);
        for (auto& th : ts) th.join();
        secs =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
                .count();
      }
      tr.after_run();
      if (run < 0) continue;
      // job-wide: every rank does the same work as this one
      double units = self ? 1.0 * o.threads * nranks
                          : 1.0 * o.threads * nranks / 2.0;  // pairs
      double v = 0;
      switch (o.kind) {
        case kind_t::msgrate:  // messages delivered per second
          v = (self ? 1.0 : 2.0) * o.window * n * units / secs;
          break;
        case kind_t::bandwidth:  // payload bytes delivered, MB/s
          v = static_cast<double>(size) * o.window * n * units / secs / 1e6;
          break;
        case kind_t::latency:  // one-way time of one message, us
          v = secs / n / (self ? 1.0 : 2.0) * 1e6;
          break;
      }
      values.push_back(v);
    }
    std::sort(values.begin(), values.end());
    if (rank == 0) {
      const char* unit = o.kind == kind_t::msgrate     ? "msgs/s"
                         : o.kind == kind_t::bandwidth ? "MB/s"
                                                       : "us";
      const char* fmt = o.kind == kind_t::latency ? "%s,%.3f,%.3f,%.3f,%s,%s"
                                                  : "%s,%.1f,%.1f,%.1f,%s,%s";
      char head[256];
      std::snprintf(head, sizeof(head), "%s,%s,%s,%d,%d,%zu,%ld",
                    kind_name(o.kind), tr.library(), mode.c_str(), nranks,
                    o.threads, size, iters);
      std::printf(fmt, head, median_of_sorted(values), values.front(),
                  values.back(), unit, o.op.c_str());
      std::printf(",%ld,%s\n", o.window, tr.protocol(size).c_str());
      std::fflush(stdout);
    }
  }
  tr.quiesce();
  chans.clear();
  tr.teardown();
  return status;
}

}  // namespace bench

#endif  // LCI_BENCHMARKS_COMMON_SUITE_HPP
