// init_fina: the smallest program a launcher test can run. It initializes the
// global runtime, prints its rank, the rank count and the network backend in
// force, and finalizes at once, with no communication: a rank that finishes
// early must not take away what a slower peer still needs to start (its
// shared-memory segment, its endpoint).
//
// Usage: init_fina [--size N]   (--size: the expected number of ranks)
// Prints "init_fina: rank R of N (backend B): ok" and exits 0, or prints
// the error and exits 1.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <lci.hpp>
#include <string>

int main(int argc, char** argv)
{
  int expected_size = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--size") == 0 && i + 1 < argc) {
      expected_size = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: init_fina [--size N]\n");
      return 2;
    }
  }
  try {
    lci::g_runtime_init();
    int rank = lci::get_rank_me();
    int n = lci::get_rank_n();
    std::string backend = lci::get_g_runtime().get_attr_backend();
    lci::g_runtime_fina();
    if (expected_size > 0 && n != expected_size) {
      std::fprintf(stderr, "init_fina: rank %d: %d ranks, expected %d\n", rank,
                   n, expected_size);
      return 1;
    }
    std::printf("init_fina: rank %d of %d (backend %s): ok\n", rank, n,
                backend.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "init_fina: error: %s\n", e.what());
    return 1;
  }
}
