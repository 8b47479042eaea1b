// Collective latency with LCI (benchmarks/common/coll_suite.hpp; the MPI twin
// is benchmarks/mpi/mpi_coll.cpp). Run under lcrun:
//   lcrun -n 4 build/release/benchmarks/lci_coll --coll allreduce
#include <cstdio>
#include <lci.hpp>
#include <string>

#include "common/coll_suite.hpp"

namespace
{

void sum_doubles(const void* l, const void* r, void* d, size_t n)
{
  auto* a = static_cast<const double*>(l);
  auto* b = static_cast<const double*>(r);
  auto* o = static_cast<double*>(d);
  for (size_t i = 0; i < n; ++i) o[i] = a[i] + b[i];
}

struct lci_coll_t {
  const char* library() const { return "lci"; }
  int rank() const { return lci::get_rank_me(); }
  int nranks() const { return lci::get_rank_n(); }
  void barrier() { lci::barrier(); }
  void run(const std::string& coll, const std::string& alg, void* s, void* r,
           size_t size)
  {
    int a = alg == "direct" ? 1 : alg == "tree" ? 2 : alg == "ring" ? 3 : 0;
    if (coll == "barrier") {
      lci::barrier();
    } else if (coll == "broadcast") {
      lci::broadcast_x(s, size, 0)
          .algorithm(static_cast<lci::broadcast_algorithm_t>(a))();
    } else if (coll == "reduce") {
      lci::reduce(s, r, size / 8, 8, &sum_doubles, 0);
    } else if (coll == "allreduce") {
      lci::allreduce_x(s, r, size / 8, 8, &sum_doubles)
          .algorithm(static_cast<lci::allreduce_algorithm_t>(a))();
    } else if (coll == "reduce_scatter") {
      lci::reduce_scatter_x(s, r, size / 8, 8, &sum_doubles)
          .algorithm(static_cast<lci::reduce_scatter_algorithm_t>(a))();
    } else if (coll == "allgather") {
      lci::allgather_x(s, r, size)
          .algorithm(a == 3   ? lci::allgather_algorithm_t::ring
                     : a == 1 ? lci::allgather_algorithm_t::direct
                              : lci::allgather_algorithm_t::none)();
    } else {
      lci::alltoall(s, r, size);
    }
  }
};

}  // namespace

int main(int argc, char** argv)
{
  bench::coll_options_t o;
  bench::cli_t cli("lci_coll",
                   "latency of LCI's collectives (microseconds per call); "
                   "run under lcrun");
  bench::add_coll_options(cli, o, {"none", "direct", "tree", "ring"});
  cli.parse(argc, argv);
  if (o.algorithm == "tree" && o.coll == "allgather") {
    std::fprintf(stderr, "lci_coll: allgather has no tree algorithm\n");
    return 2;
  }
  try {
    lci::g_runtime_init();
    // what ran, for the driver (benchmarks/compare_coll.py) to report
    if (lci::get_rank_me() == 0)
      std::printf("# backend: %s\n",
                  lci::get_g_runtime().get_attr_backend().c_str());
    lci_coll_t lib;
    int rc = bench::run_coll_suite(lib, o);
    lci::g_runtime_fina();
    return rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lci_coll: %s\n", e.what());
    return 1;
  }
}
