// A tiny harness for the resource benchmarks (paper Figure 5): run a body on
// N threads at once for a fixed number of operations each, repeat, and print
// one CSV row with the median, min and max throughput in Mops.
//
// Rows: benchmark,library,mode,processes,threads,size,iterations,median,min,
// max,unit (the format of ../shared/design/BENCHMARKS.md).
#ifndef LCI_BENCHMARKS_RESOURCES_HARNESS_HPP
#define LCI_BENCHMARKS_RESOURCES_HARNESS_HPP

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace bench
{

struct options_t {
  std::vector<int> threads = {1, 2, 4, 8};
  long ops = 1000000;  // per thread per run
  int runs = 5;        // after one warm-up run
  bool pin = true;     // thread i on core i % ncores
};

inline options_t parse(int argc, char** argv, const char* what)
{
  options_t o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) {
      o.threads.clear();
      for (char* s = std::strtok(argv[++i], ","); s;
           s = std::strtok(nullptr, ","))
        o.threads.push_back(std::atoi(s));
    } else if (a == "--ops" && i + 1 < argc) {
      o.ops = std::atol(argv[++i]);
    } else if (a == "--runs" && i + 1 < argc) {
      o.runs = std::atoi(argv[++i]);
    } else if (a == "--no-pin") {
      o.pin = false;
    } else {
      std::fprintf(a == "--help" ? stdout : stderr,
                   "%s\nusage: %s [--threads 1,2,4,8] [--ops N per thread] "
                   "[--runs 5] [--no-pin]\n",
                   what, argv[0]);
      std::exit(a == "--help" ? 0 : 2);
    }
  }
  return o;
}

inline void pin_to(int i)
{
  unsigned n = std::thread::hardware_concurrency();
  if (n == 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(i % n, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

inline void print_header()
{
  std::printf(
      "benchmark,library,mode,processes,threads,size,iterations,median,min,"
      "max,unit\n");
}

// Runs body(thread_index, ops) on `nthreads` threads released together;
// returns the throughput of each run in Mops (total ops / wall time).
inline std::vector<double> measure(const options_t& o, int nthreads,
                                   const std::function<void(int, long)>& body)
{
  std::vector<double> mops;
  for (int run = -1; run < o.runs; ++run) {  // run -1 is the warm-up
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> ts;
    for (int t = 0; t < nthreads; ++t)
      ts.emplace_back([&, t] {
        if (o.pin) pin_to(t);
        ready.fetch_add(1);
        while (!go.load()) {
        }
        body(t, o.ops);
      });
    while (ready.load() < nthreads) {
    }
    auto t0 = std::chrono::steady_clock::now();
    go.store(true);
    for (auto& th : ts) th.join();
    double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    if (run >= 0)
      mops.push_back(static_cast<double>(o.ops) * nthreads / secs / 1e6);
  }
  return mops;
}

inline void report(const char* name, const char* mode, int nthreads, long ops,
                   std::vector<double> mops)
{
  std::sort(mops.begin(), mops.end());
  std::printf("%s,lci,%s,1,%d,0,%ld,%.3f,%.3f,%.3f,Mops\n", name, mode,
              nthreads, ops, mops[mops.size() / 2], mops.front(), mops.back());
  std::fflush(stdout);
}

}  // namespace bench

#endif  // LCI_BENCHMARKS_RESOURCES_HARNESS_HPP
