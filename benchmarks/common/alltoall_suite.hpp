// The point-to-point all-to-all benchmark, shared by ours
// (benchmarks/alltoall.cpp) and the MPI twin (benchmarks/mpi/mpi_alltoall.cpp):
// in every round each rank sends --k messages of --size bytes to every other
// rank and receives as many from each; a round ends for a rank when its
// sends and receives are complete. Messages carry (round, source, index) in
// their first 8 bytes and every one is checked; tags alternate between two
// sets by round parity (a rank is at most one round ahead of any other).
//
// The figure is the time per message of the whole job: the wall time of the
// timed rounds divided by the messages of all ranks (rounds x n x (n-1) x k),
// in nanoseconds. With a fixed number of cores it stays flat as ranks are
// added if the library shares the cores well, and grows when ranks that
// wait for data hold the cores their peers need (issue 9: 32 ranks on 2
// cores must stay within 10x of 2 ranks). Rank 0 prints one CSV row per run
// set (benchmarks/common/suite.hpp's columns): median, min and max over
// --runs runs; `window` is k, `protocol` the wait mode.
//
// Each run lasts about --seconds / --runs: rank 0 decides at the start of
// each round whether it is the run's last and says so in the messages it
// sends, which every rank receives in that round (so no extra
// synchronization, and a collapsed library still finishes after one round).
//
// A library supplies
//   const char* library();  int rank();  int nranks();  void barrier();
//   void exchange(int k, size_t size, int parity, char* out, char* in);
// exchange sends out[(p*k+j)*size ...] to rank p with tag parity*k+j and
// receives from rank p with that tag into in[(p*k+j)*size ...], for every
// p other than itself and j < k, and returns when all are complete.
#ifndef LCI_BENCHMARKS_COMMON_ALLTOALL_SUITE_HPP
#define LCI_BENCHMARKS_COMMON_ALLTOALL_SUITE_HPP

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli.hpp"

namespace bench
{

struct alltoall_options_t {
  size_t size = 8;
  long k = 4;
  double seconds = 2.0;
  long max_rounds = 1000000;
  long warmup = 5;
  int runs = 3;
};

inline void add_alltoall_options(cli_t& cli, alltoall_options_t& o)
{
  cli.add_custom(
      "--size", "BYTES", "bytes per message (at least 8)", "8",
      [&o](const char* v) { return parse_size(v, &o.size) && o.size >= 8; });
  cli.add("--k", &o.k, "messages per ordered pair of ranks and round");
  cli.add_custom("--seconds", "S", "time budget of the timed runs together",
                 "2", [&o](const char* v) {
                   char* end = nullptr;
                   o.seconds = std::strtod(v, &end);
                   return end != v && *end == 0 && o.seconds > 0;
                 });
  cli.add("--max-rounds", &o.max_rounds, "at most this many rounds per run");
  cli.add("--warmup", &o.warmup, "untimed rounds before the runs");
  cli.add("--runs", &o.runs, "timed runs (median, min, max)");
}

namespace a2a_detail
{
constexpr uint64_t kStop = uint64_t(1) << 63;
inline uint64_t word(uint64_t round, int src, long j)
{
  return (round & 0xffffffffu) << 24 | static_cast<uint64_t>(src) << 12 |
         static_cast<uint64_t>(j);
}
}  // namespace a2a_detail

template <typename L>
int run_alltoall_suite(L& lib, const alltoall_options_t& o,
                       const std::string& mode)
{
  using a2a_detail::kStop;
  using a2a_detail::word;
  const int me = lib.rank(), n = lib.nranks();
  if (n < 2 || n > 4096 || o.k < 1 || o.k > 2048 || o.runs < 1 ||
      o.warmup < 0 || o.max_rounds < 1) {
    if (me == 0)
      std::fprintf(stderr,
                   "alltoall: needs 2 to 4096 ranks, 1 <= k <= 2048 and "
                   "positive counts\n");
    return 2;
  }
  const size_t k = static_cast<size_t>(o.k), size = o.size;
  std::vector<char> out(static_cast<size_t>(n) * k * size, 'o');
  std::vector<char> in(static_cast<size_t>(n) * k * size, 'i');
  uint64_t round = 0;
  long failures = 0;
  // one round; true when rank 0 marked it as the run's last
  auto one_round = [&](bool stop) {
    for (int p = 0; p < n; ++p)
      for (size_t j = 0; j < k; ++j) {
        uint64_t w = word(round, me, static_cast<long>(j)) | (stop ? kStop : 0);
        std::memcpy(&out[(p * k + j) * size], &w, sizeof(w));
      }
    lib.exchange(static_cast<int>(k), size, static_cast<int>(round & 1),
                 out.data(), in.data());
    bool last = false;
    for (int p = 0; p < n; ++p) {
      if (p == me) continue;
      for (size_t j = 0; j < k; ++j) {
        uint64_t w;
        std::memcpy(&w, &in[(p * k + j) * size], sizeof(w));
        if (p == 0 && (w & kStop)) last = true;
        if ((w & ~kStop) != word(round, p, static_cast<long>(j)) ||
            (p != 0 && (w & kStop))) {
          if (failures++ < 5)
            std::fprintf(stderr,
                         "alltoall: rank %d round %llu: message %zu from rank "
                         "%d carries %llx\n",
                         me, static_cast<unsigned long long>(round), j, p,
                         static_cast<unsigned long long>(w));
        }
      }
    }
    ++round;
    return me == 0 ? stop : last;
  };
  if (me == 0)
    std::printf(
        "benchmark,library,mode,processes,threads,size,iterations,median,"
        "min,max,unit,op,window,protocol\n");
  for (long i = 0; i < o.warmup; ++i) one_round(false);
  const double budget = o.seconds / o.runs;
  std::vector<double> values;
  long total_rounds = 0;
  for (int r = 0; r < o.runs; ++r) {
    lib.barrier();
    auto t0 = std::chrono::steady_clock::now();
    long rounds = 0;
    for (;;) {
      bool stop = false;
      if (me == 0) {
        double el =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
                .count();
        stop = el >= budget || rounds + 1 >= o.max_rounds;
      }
      ++rounds;
      if (one_round(stop)) break;
    }
    auto t1 = std::chrono::steady_clock::now();
    total_rounds += rounds;
    double msgs = static_cast<double>(rounds) * n * (n - 1) * k;
    values.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() /
                     msgs);
  }
  std::sort(values.begin(), values.end());
  if (me == 0) {
    size_t m = values.size();
    double median =
        m % 2 ? values[m / 2] : (values[m / 2 - 1] + values[m / 2]) / 2;
    std::printf(
        "alltoall,%s,process,%d,1,%zu,%ld,%.1f,%.1f,%.1f,ns/msg,"
        "sendrecv,%zu,%s\n",
        lib.library(), n, size, total_rounds, median, values.front(),
        values.back(), k, mode.c_str());
    std::fflush(stdout);
  }
  if (failures) {
    std::fprintf(stderr, "alltoall: rank %d: %ld wrong messages\n", me,
                 failures);
    std::printf("# error: rank %d: %ld wrong messages\n", me, failures);
    return 1;
  }
  return 0;
}

}  // namespace bench

#endif  // LCI_BENCHMARKS_COMMON_ALLTOALL_SUITE_HPP
