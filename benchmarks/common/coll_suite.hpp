// The collective benchmark, shared by ours (benchmarks/coll.cpp) and the MPI
// twin (benchmarks/mpi/mpi_coll.cpp): the latency of one collective per
// size, back to back, after a barrier. A library supplies
//   const char* library();  int rank();  int nranks();
//   void barrier();
//   void run(const std::string& coll, const std::string& algorithm,
//            void* sendbuf, void* recvbuf, size_t size);
// where `size` is the bytes each rank contributes (reduce, allreduce:
// size / 8 doubles summed; reduce_scatter: size bytes received per rank;
// allgather, alltoall: size bytes per rank pair; broadcast: size bytes from
// rank 0). Rank 0 prints the usual CSV rows (benchmarks/common/suite.hpp):
// the median, min and max over --runs timed runs of the mean time per
// collective, in microseconds; `op` is the collective and `protocol` the
// algorithm.
#ifndef LCI_BENCHMARKS_COMMON_COLL_SUITE_HPP
#define LCI_BENCHMARKS_COMMON_COLL_SUITE_HPP

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "cli.hpp"

namespace bench
{

struct coll_options_t {
  std::string coll = "allreduce";
  std::string algorithm = "none";
  std::vector<size_t> sizes;
  long iters = 2000;
  long warmup = 100;
  int runs = 5;
  coll_options_t() { parse_size_list("8:1M:8", &sizes); }
};

inline const std::vector<std::string>& coll_names()
{
  static const std::vector<std::string> names = {
      "barrier",        "broadcast", "reduce",  "allreduce",
      "reduce_scatter", "allgather", "alltoall"};
  return names;
}

inline void add_coll_options(cli_t& cli, coll_options_t& o,
                             std::vector<std::string> algorithms)
{
  cli.add("--coll", &o.coll, "the collective", coll_names());
  cli.add("--algorithm", &o.algorithm,
          "the algorithm (none: the library chooses)", algorithms);
  cli.add("--sizes", &o.sizes, "bytes per rank (barrier: ignored)");
  cli.add("--iters", &o.iters,
          "collectives per timed run at 8 bytes (fewer above 16 KiB)");
  cli.add("--warmup", &o.warmup, "untimed collectives before each size");
  cli.add("--runs", &o.runs, "timed runs per size (median, min, max)");
}

template <typename L>
int run_coll_suite(L& lib, const coll_options_t& o)
{
  const int rank = lib.rank(), n = lib.nranks();
  if (o.iters < 1 || o.runs < 1 || o.warmup < 0) {
    if (rank == 0) std::fprintf(stderr, "coll: bad iteration counts\n");
    return 2;
  }
  std::vector<size_t> sizes = o.sizes;
  if (o.coll == "barrier") sizes = {0};
  size_t max_size = 8;
  for (size_t s : sizes) max_size = std::max(max_size, s);
  // sendbuf: n blocks (alltoall, reduce_scatter); recvbuf: n blocks
  std::vector<double> send(max_size * n / 8 + 1, 1.0);
  std::vector<double> recv(max_size * n / 8 + 1, 0.0);
  if (rank == 0) {
    std::printf(
        "benchmark,library,mode,processes,threads,size,iterations,median,"
        "min,max,unit,op,window,protocol\n");
  }
  for (size_t size : sizes) {
    long iters = o.iters;
    if (size > (16u << 10)) iters = std::max(10L, iters * 16384 / (long)size);
    long warmup = std::min(o.warmup, iters);
    for (long i = 0; i < warmup; ++i)
      lib.run(o.coll, o.algorithm, send.data(), recv.data(), size);
    std::vector<double> values;
    for (int r = 0; r < o.runs; ++r) {
      lib.barrier();
      auto t0 = std::chrono::steady_clock::now();
      for (long i = 0; i < iters; ++i)
        lib.run(o.coll, o.algorithm, send.data(), recv.data(), size);
      auto t1 = std::chrono::steady_clock::now();
      values.push_back(
          std::chrono::duration<double, std::micro>(t1 - t0).count() /
          static_cast<double>(iters));
    }
    std::sort(values.begin(), values.end());
    if (rank == 0) {
      size_t m = values.size();
      double median =
          m % 2 ? values[m / 2] : (values[m / 2 - 1] + values[m / 2]) / 2;
      std::printf("coll,%s,process,%d,1,%zu,%ld,%.3f,%.3f,%.3f,us,%s,1,%s\n",
                  lib.library(), n, size, iters, median, values.front(),
                  values.back(), o.coll.c_str(), o.algorithm.c_str());
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace bench

#endif  // LCI_BENCHMARKS_COMMON_COLL_SUITE_HPP
