// mpi_interop: a program that uses MPI alongside LCI (built only with
// -DLCI_WITH_MPI=ON). It initializes MPI itself, so the runtime's "auto"
// bootstrap must pick the "mpi" backend; LCI's ranks must be MPI's ranks.
// Two runtimes in sequence run the ring exchange of ring_common.hpp, with
// MPI collectives in between, then the program finalizes MPI after LCI.
// Prints "mpi_interop: rank R of N (bootstrap mpi): ok" and exits 0.
#include <mpi.h>

#include <cstdio>
#include <exception>
#include <lci.hpp>
#include <string>

#include "ring_common.hpp"

int main(int argc, char** argv)
{
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  int mpi_rank = -1, mpi_size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
  int status = 0;
  std::string backend;
  try {
    for (int k = 0; k < 2; ++k) {
      lci::g_runtime_init();
      backend = lci::get_g_runtime().get_attr_bootstrap_backend();
      ring::require(backend == "mpi",
                    "bootstrap backend '" + backend + "', expected 'mpi'");
      ring::require(
          lci::get_rank_me() == mpi_rank && lci::get_rank_n() == mpi_size,
          "LCI rank " + std::to_string(lci::get_rank_me()) + " of " +
              std::to_string(lci::get_rank_n()) + ", MPI rank " +
              std::to_string(mpi_rank) + " of " + std::to_string(mpi_size));
      ring::exchange(k);
      // MPI keeps working between and alongside LCI's use of it
      int one = 1, sum = 0;
      MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
      ring::require(sum == mpi_size,
                    "MPI_Allreduce gave " + std::to_string(sum));
      lci::g_runtime_fina();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpi_interop: rank %d: error: %s\n", mpi_rank,
                 e.what());
    status = 1;
  }
  if (status == 0) {
    std::printf("mpi_interop: rank %d of %d (bootstrap %s): ok\n", mpi_rank,
                mpi_size, backend.c_str());
  }
  MPI_Finalize();
  return status;
}
