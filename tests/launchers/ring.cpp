// ring: the launcher test program. Under any launcher (lcrun, mpiexec.hydra,
// mpirun, srun) it initializes the global runtime several times in sequence,
// checks the rank and size against the expected ones and the launcher's own
// variables, checks which bootstrap backend is in force, and runs the ring
// exchange of ring_common.hpp on each runtime.
//
// Usage: ring [--size N] [--backend NAME] [--runtimes K]
//             [--die-rank R --die-how kill|exit|hang --die-when start|second]
//   --size / --backend: expected number of ranks / bootstrap backend.
//   --runtimes K: g_runtime_init/fina K times (default 2).
//   --die-*: rank R kills itself with SIGKILL (or exits with status 3, or
//            hangs) at start, before g_runtime_init (rank from the
//            launcher's variables), or after the first runtime, while the
//            others start the second one: the job must end with an error,
//            not hang.
// Prints "ring: rank R of N (bootstrap B): ok" and exits 0 when every check
// passes; prints the error and exits 1 otherwise.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <lci.hpp>
#include <string>

#include "ring_common.hpp"

namespace
{

// The rank the launcher announced, or -1.
int launcher_rank()
{
  for (const char* name : {"PMI_RANK", "PMI_ID", "PMIX_RANK",
                           "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && value[0] != '\0') return std::atoi(value);
  }
  return -1;
}

void die(const std::string& how, int rank)
{
  std::fprintf(stderr, "ring: rank %d: dying on purpose (%s)\n", rank,
               how.c_str());
  std::fflush(stderr);
  if (how == "kill") kill(getpid(), SIGKILL);
  if (how == "hang") {
    while (true) pause();
  }
  _exit(3);
}

}  // namespace

int main(int argc, char** argv)
{
  int expected_size = 0;
  std::string expected_backend;
  int runtimes = 2;
  int die_rank = -1;
  std::string die_how = "kill";
  std::string die_when = "start";
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    bool has_value = i + 1 < argc;
    if (arg == "--size" && has_value) {
      expected_size = std::atoi(argv[++i]);
    } else if (arg == "--backend" && has_value) {
      expected_backend = argv[++i];
    } else if (arg == "--runtimes" && has_value) {
      runtimes = std::atoi(argv[++i]);
    } else if (arg == "--die-rank" && has_value) {
      die_rank = std::atoi(argv[++i]);
    } else if (arg == "--die-how" && has_value) {
      die_how = argv[++i];
    } else if (arg == "--die-when" && has_value) {
      die_when = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: ring [--size N] [--backend NAME] [--runtimes K] "
                   "[--die-rank R --die-how kill|exit|hang --die-when "
                   "start|second]\n");
      return 2;
    }
  }

  int env_rank = launcher_rank();
  if (die_rank >= 0) {
    // run.sh removes the shm regions of ranks the launcher killed
    std::fprintf(stderr, "ring: pid %ld\n", static_cast<long>(getpid()));
  }
  if (die_when == "start" && die_rank >= 0 && env_rank == die_rank) {
    die(die_how, env_rank);
  }

  int rank = -1;
  int size = -1;
  std::string backend;
  try {
    for (int k = 0; k < runtimes; ++k) {
      if (k == 1 && die_when == "second" && rank == die_rank) {
        die(die_how, rank);
      }
      lci::g_runtime_init();
      rank = lci::get_rank_me();
      int n = size = lci::get_rank_n();
      backend = lci::get_g_runtime().get_attr_bootstrap_backend();
      ring::require(expected_size <= 0 || n == expected_size,
                    "size " + std::to_string(n) + ", expected " +
                        std::to_string(expected_size));
      ring::require(env_rank < 0 || env_rank == rank,
                    "rank " + std::to_string(rank) + " but the launcher says " +
                        std::to_string(env_rank));
      ring::require(expected_backend.empty() || backend == expected_backend,
                    "bootstrap backend '" + backend + "', expected '" +
                        expected_backend + "'");
      ring::exchange(k);
      lci::g_runtime_fina();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ring: rank %d: error: %s\n",
                 rank >= 0 ? rank : env_rank, e.what());
    return 1;
  }
  std::printf("ring: rank %d of %d (bootstrap %s): ok, %d runtimes\n", rank,
              size, backend.c_str(), runtimes);
  return 0;
}
