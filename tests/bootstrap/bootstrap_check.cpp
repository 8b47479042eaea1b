// bootstrap_check: exercises lci::bootstrap::get_backend() in one process of
// a job (singleton, lcrun, mpiexec.hydra, mpirun): rank/size, allgather of
// rank-derived data of several sizes (5000 bytes forces PMI chunking) with
// every byte verified, in-place allgather, barriers. The backend requested
// is $LCI_ATTR_BOOTSTRAP_BACKEND, else "auto" (as the library does).
//
// Usage: bootstrap_check [--size N] [--backend NAME] [--reinit]
//   --size/--backend: expected job size / backend name.
//   --reinit: drop every reference to the backend and ask again: the same
//             backend must come back (it lives until exit; PMI servers
//             such as hydra refuse a second init) and still work.
// Exits 0 when all checks pass; prints the failure and exits 1 otherwise.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.hpp"

namespace
{

using lci::bootstrap::backend_t;

void check(bool ok, const std::string& what)
{
  if (!ok) throw std::runtime_error("check failed: " + what);
}

// The byte that rank `rank` contributes at `index` in an allgather of
// `size` bytes; covers all 256 values and differs between ranks.
unsigned char pattern(int rank, std::size_t index, std::size_t size)
{
  std::uint32_t x = static_cast<std::uint32_t>(rank) * 2654435761u ^
                    static_cast<std::uint32_t>(index) * 40503u ^
                    static_cast<std::uint32_t>(size);
  return static_cast<unsigned char>(x ^ (x >> 8) ^ (x >> 16));
}

void check_allgather(backend_t& b, std::size_t size, bool in_place)
{
  int me = b.rank_me();
  int n = b.rank_n();
  std::vector<unsigned char> out(size * n + 1, 0xab);  // +1: overrun guard
  std::vector<unsigned char> in(size);
  for (std::size_t i = 0; i < size; ++i) in[i] = pattern(me, i, size);
  if (in_place) {
    std::memcpy(out.data() + size * me, in.data(), size);
    b.allgather(out.data() + size * me, out.data(), size);
  } else {
    b.allgather(in.data(), out.data(), size);
  }
  for (int r = 0; r < n; ++r) {
    for (std::size_t i = 0; i < size; ++i) {
      unsigned char got = out[size * r + i];
      if (got != pattern(r, i, size)) {
        throw std::runtime_error(
            "allgather of " + std::to_string(size) + " bytes" +
            (in_place ? " (in place)" : "") + ": byte " + std::to_string(i) +
            " from rank " + std::to_string(r) + " is " + std::to_string(got) +
            ", expected " + std::to_string(pattern(r, i, size)));
      }
    }
  }
  check(out[size * n] == 0xab, "allgather wrote past the output buffer");
}

void check_backend(backend_t& b, int expected_size,
                   const std::string& expected_backend)
{
  int me = b.rank_me();
  int n = b.rank_n();
  check(n >= 1 && me >= 0 && me < n,
        "rank " + std::to_string(me) + " of " + std::to_string(n));
  if (expected_size > 0) {
    check(n == expected_size, "size " + std::to_string(n) + ", expected " +
                                  std::to_string(expected_size));
  }
  if (!expected_backend.empty()) {
    check(expected_backend == b.name(), std::string("backend '") + b.name() +
                                            "', expected '" + expected_backend +
                                            "'");
  }
  const char* env_rank = std::getenv("PMI_RANK");
  if (std::string(b.name()) == "pmi1" && env_rank != nullptr) {
    check(std::to_string(me) == env_rank,
          "rank " + std::to_string(me) + " but PMI_RANK=" + env_rank);
  }
  // Every rank is present exactly once.
  std::vector<int> ranks(n, -1);
  b.allgather(&me, ranks.data(), sizeof(int));
  for (int r = 0; r < n; ++r) {
    check(ranks[r] == r, "allgather of ranks: slot " + std::to_string(r) +
                             " holds " + std::to_string(ranks[r]));
  }
  for (std::size_t size : {0, 1, 3, 100, 5000}) {
    check_allgather(b, size, false);
  }
  check_allgather(b, 777, true);
  for (int i = 0; i < 3; ++i) b.barrier();
}

}  // namespace

int main(int argc, char** argv)
{
  int expected_size = 0;
  std::string expected_backend;
  bool reinit = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--size" && i + 1 < argc) {
      expected_size = std::atoi(argv[++i]);
    } else if (arg == "--backend" && i + 1 < argc) {
      expected_backend = argv[++i];
    } else if (arg == "--reinit") {
      reinit = true;
    } else {
      std::fprintf(stderr,
                   "usage: bootstrap_check [--size N] [--backend NAME] "
                   "[--reinit]\n");
      return 2;
    }
  }
  try {
    const char* forced = std::getenv("LCI_ATTR_BOOTSTRAP_BACKEND");
    std::string requested = forced && forced[0] ? forced : "auto";
    auto backend = lci::bootstrap::get_backend(requested);
    check(backend != nullptr, "get_backend() returned null");
    check(lci::bootstrap::get_backend() == backend,
          "a second get_backend() returned another instance");
    check_backend(*backend, expected_size, expected_backend);
    int me = backend->rank_me();
    int n = backend->rank_n();
    if (reinit) {
      const backend_t* before = backend.get();
      backend.reset();
      backend = lci::bootstrap::get_backend(requested);
      check(backend.get() == before,
            "the backend was re-created after its last user released it");
      check_backend(*backend, expected_size, expected_backend);
      check(backend->rank_me() == me, "rank changed after re-creation");
    }
    std::printf("bootstrap_check: rank %d of %d (%s): OK\n", me, n,
                backend->name());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bootstrap_check: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
